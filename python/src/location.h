// Python file and line for the copy observer's findings (location.cpp).
#pragma once

#include <devcopy/report.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <string>
#include <vector>

namespace devcopy::python {

/// Makes the observer ask Python where each copy was made, skipping frames
/// under `skip` (torch's and devcopy's own directories). False when the
/// probe has no location hook (then Python names locations itself).
bool install_location_provider(const std::vector<std::string> &skip);

/// Makes the observer ask `lookup()` (a Python callable returning a module
/// name or None) which module made each copy that may become a finding.
/// False when the probe has no such hook.
bool install_scope_provider(pybind11::object lookup);

/// Adds the observer's per-finding location fields to the Finding binding
/// when the probe has them: `location` ("file:line"), `function`, `count`.
void bind_location_fields(pybind11::class_<Finding> &finding);

} // namespace devcopy::python

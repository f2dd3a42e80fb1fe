// Python bindings of the memory timeline's types (timeline.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace devcopy::python {

/// Registers SourceLocation, MemorySample, PeakPart, SegmentMiss,
/// TimelineMark and DeviceTimeline in `m`.
void bind_timeline(pybind11::module_ &m);

} // namespace devcopy::python

// The memory timeline's types (devcopy/report.h), bound for Python: the
// observer's reports carry them, and saved JSON reports are read back into
// them (devcopy._report).
#include "timeline.h"

#include <devcopy/report.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace devcopy::python {

void bind_timeline(py::module_ &m) {
  py::class_<SourceLocation>(m, "SourceLocation")
      .def(py::init<>())
      .def_readwrite("function", &SourceLocation::function)
      .def_readwrite("file", &SourceLocation::file)
      .def_readwrite("line", &SourceLocation::line)
      .def("__str__", [](const SourceLocation &l) {
        return l.known() ? location_text(l) : std::string();
      });
  py::class_<MemorySample>(m, "MemorySample")
      .def(py::init<>())
      .def_readwrite("time_ns", &MemorySample::time_ns)
      .def_readwrite("allocated", &MemorySample::allocated)
      .def_readwrite("reserved", &MemorySample::reserved);
  py::class_<PeakPart>(m, "PeakPart")
      .def(py::init<>())
      .def_readwrite("owner", &PeakPart::owner)
      .def_readwrite("where", &PeakPart::where)
      .def_readwrite("bytes", &PeakPart::bytes)
      .def_readwrite("blocks", &PeakPart::blocks);
  py::class_<SegmentMiss>(m, "SegmentMiss")
      .def(py::init<>())
      .def_readwrite("time_ns", &SegmentMiss::time_ns)
      .def_readwrite("requested", &SegmentMiss::requested)
      .def_readwrite("segment", &SegmentMiss::segment)
      .def_readwrite("cached_free", &SegmentMiss::cached_free)
      .def_readwrite("largest_free_block", &SegmentMiss::largest_free_block)
      .def_readwrite("where", &SegmentMiss::where);
  py::class_<TimelineMark>(m, "TimelineMark")
      .def(py::init<>())
      .def_readwrite("time_ns", &TimelineMark::time_ns)
      .def_readwrite("ordinal", &TimelineMark::ordinal)
      .def_readwrite("bytes", &TimelineMark::bytes)
      .def_readwrite("route", &TimelineMark::route)
      .def_readwrite("where", &TimelineMark::where);
  py::class_<DeviceTimeline>(m, "DeviceTimeline")
      .def(py::init<>())
      .def_readwrite("device", &DeviceTimeline::device)
      .def_readwrite("samples", &DeviceTimeline::samples)
      .def_readwrite("peak_bytes", &DeviceTimeline::peak_bytes)
      .def_readwrite("peak_reserved", &DeviceTimeline::peak_reserved)
      .def_readwrite("peak_time_ns", &DeviceTimeline::peak_time_ns)
      .def_readwrite("peak_where", &DeviceTimeline::peak_where)
      .def_readwrite("parts", &DeviceTimeline::parts)
      .def_readwrite("explained_by", &DeviceTimeline::explained_by)
      .def_readwrite("explanation", &DeviceTimeline::explanation)
      .def_readwrite("misses", &DeviceTimeline::misses)
      .def_readwrite("marks", &DeviceTimeline::marks)
      .def("owned", &DeviceTimeline::owned);
}

} // namespace devcopy::python

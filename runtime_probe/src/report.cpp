// Text and JSON forms of a Report. The JSON keys are part of the interface
// (tools and CI read them): add keys, never rename them.
#include "devcopy/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>

namespace devcopy {

std::vector<Finding> Report::findings(const std::string &kind) const {
  std::vector<Finding> out;
  for (const Finding &f : findings_)
    if (f.kind == kind)
      out.push_back(f);
  return out;
}

std::int64_t Report::wasted_bytes() const {
  std::int64_t sum = 0;
  for (const Finding &f : findings_)
    sum += f.bytes;
  return sum;
}

void Report::merge(const Report &other) {
  findings_.insert(findings_.end(), other.findings_.begin(),
                   other.findings_.end());
  shared_.insert(shared_.end(), other.shared_.begin(), other.shared_.end());
  devices_.insert(devices_.end(), other.devices_.begin(), other.devices_.end());
  copies_.insert(copies_.end(), other.copies_.begin(), other.copies_.end());
  skipped_.insert(skipped_.end(), other.skipped_.begin(), other.skipped_.end());
  ranks_.insert(ranks_.end(), other.ranks_.begin(), other.ranks_.end());
  replicated_.insert(replicated_.end(), other.replicated_.begin(),
                     other.replicated_.end());
  timelines_.insert(timelines_.end(), other.timelines_.begin(),
                    other.timelines_.end());
  host_syncs_ += other.host_syncs_;
}

namespace {

std::map<int, std::int64_t>
reachable_per_rank(const std::vector<RankMemory> &ranks) {
  std::map<int, std::int64_t> total;
  for (const RankMemory &m : ranks)
    total[m.rank] += m.reachable_bytes;
  return total;
}

} // namespace

double Report::rank_skew() const {
  const auto total = reachable_per_rank(ranks_);
  if (total.empty())
    return 0;
  auto [lo, hi] = std::minmax_element(
      total.begin(), total.end(),
      [](const auto &a, const auto &b) { return a.second < b.second; });
  return lo->second > 0
             ? static_cast<double>(hi->second) / static_cast<double>(lo->second)
             : 0;
}

std::string format_bytes(std::int64_t bytes) {
  if (bytes < 0)
    return "-" + format_bytes(-bytes);
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

namespace {

// JSON string escaping per RFC 8259: quote, backslash and control characters;
// other bytes (UTF-8 included) pass through unchanged.
void put_string(std::ostream &os, const std::string &s) {
  os << '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      os << "\\\"";
      break;
    case '\\':
      os << "\\\\";
      break;
    case '\n':
      os << "\\n";
      break;
    case '\r':
      os << "\\r";
      break;
    case '\t':
      os << "\\t";
      break;
    case '\b':
      os << "\\b";
      break;
    case '\f':
      os << "\\f";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        os << buf;
      } else {
        os << c;
      }
    }
  }
  os << '"';
}

void put_strings(std::ostream &os, const std::vector<std::string> &v) {
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i)
      os << ',';
    put_string(os, v[i]);
  }
  os << ']';
}

// Writes `"key":` with a leading comma for every key but the first.
class Object {
public:
  explicit Object(std::ostream &os) : os_(os) { os_ << '{'; }
  ~Object() { os_ << '}'; }
  std::ostream &key(const char *k) {
    if (!first_)
      os_ << ',';
    first_ = false;
    put_string(os_, k);
    return os_ << ':';
  }
  void str(const char *k, const std::string &v) { put_string(key(k), v); }
  void num(const char *k, std::int64_t v) { key(k) << v; }
  void strs(const char *k, const std::vector<std::string> &v) {
    put_strings(key(k), v);
  }

private:
  std::ostream &os_;
  bool first_ = true;
};

template <class T, class F>
void put_array(Object &obj, const char *k, const std::vector<T> &items,
               F &&each) {
  std::ostream &os = obj.key(k);
  os << '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i)
      os << ',';
    each(os, items[i]);
  }
  os << ']';
}

void print_list(std::ostream &os, const char *label,
                const std::vector<std::string> &v) {
  if (v.empty())
    return;
  // For people: a long list is cut (to_json keeps every name).
  constexpr size_t kShown = 20;
  os << "    " << label << ": ";
  for (size_t i = 0; i < v.size() && i < kShown; ++i)
    os << (i ? ", " : "") << v[i];
  if (v.size() > kShown)
    os << " and " << v.size() - kShown << " more";
  os << '\n';
}

void put_where(Object &obj, const SourceLocation &w) {
  obj.str("function", w.function);
  obj.str("file", w.file);
  obj.num("line", w.line);
}

void put_timeline(std::ostream &o, const DeviceTimeline &t) {
  Object obj(o);
  obj.str("device", t.device);
  obj.num("peak_bytes", t.peak_bytes);
  obj.num("peak_reserved", t.peak_reserved);
  obj.num("peak_time_ns", t.peak_time_ns);
  {
    Object w(obj.key("peak_where"));
    put_where(w, t.peak_where);
  }
  obj.str("explained_by", t.explained_by);
  obj.str("explanation", t.explanation);
  put_array(obj, "parts", t.parts, [](std::ostream &os, const PeakPart &p) {
    Object part(os);
    part.str("owner", p.owner);
    part.num("bytes", p.bytes);
    part.num("blocks", p.blocks);
    put_where(part, p.where);
  });
  put_array(obj, "misses", t.misses,
            [](std::ostream &os, const SegmentMiss &m) {
              Object miss(os);
              miss.num("time_ns", m.time_ns);
              miss.num("requested", m.requested);
              miss.num("segment", m.segment);
              miss.num("cached_free", m.cached_free);
              miss.num("largest_free_block", m.largest_free_block);
              put_where(miss, m.where);
            });
  put_array(obj, "marks", t.marks, [](std::ostream &os, const TimelineMark &m) {
    Object mark(os);
    mark.num("time_ns", m.time_ns);
    mark.num("ordinal", m.ordinal);
    mark.num("bytes", m.bytes);
    mark.str("route", m.route);
    put_where(mark, m.where);
  });
  // Samples as [time_ns, allocated, reserved] triples: compact.
  std::ostream &s = obj.key("samples");
  s << '[';
  for (std::size_t i = 0; i < t.samples.size(); ++i)
    s << (i ? "," : "") << '[' << t.samples[i].time_ns << ','
      << t.samples[i].allocated << ',' << t.samples[i].reserved << ']';
  s << ']';
}

void print_timeline(std::ostream &os, const DeviceTimeline &t) {
  os << "devcopy: peak " << format_bytes(t.peak_bytes) << " on " << t.device;
  if (t.peak_where.known())
    os << " during " << location_text(t.peak_where);
  os << " (reserved " << format_bytes(t.peak_reserved) << ")\n";
  constexpr std::size_t kShown = 8;
  for (std::size_t i = 0; i < t.parts.size() && i < kShown; ++i) {
    const PeakPart &p = t.parts[i];
    os << "    " << format_bytes(p.bytes) << ' ' << p.owner;
    if (p.where.known())
      os << " allocated at " << location_text(p.where);
    os << '\n';
  }
  if (t.parts.size() > kShown)
    os << "    and " << t.parts.size() - kShown << " smaller parts\n";
  if (!t.explanation.empty())
    os << "    " << (t.explained_by.empty() ? "" : t.explained_by + ": ")
       << t.explanation << '\n';
  for (const SegmentMiss &m : t.misses) {
    os << "devcopy: new segment on " << t.device << ": a request of "
       << format_bytes(m.requested);
    if (m.where.known())
      os << " at " << location_text(m.where);
    os << " made a new segment of " << format_bytes(m.segment) << " although "
       << format_bytes(m.cached_free)
       << " were cached unused (largest free block "
       << format_bytes(m.largest_free_block)
       << "): the cached blocks were too small for it; allocate the large "
          "block first, or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
          "True\n";
  }
}

} // namespace

std::string location_text(const SourceLocation &l) {
  std::string out = l.file.empty() ? std::string("<no debug info>") : l.file;
  if (l.line > 0)
    out += ":" + std::to_string(l.line);
  if (!l.function.empty())
    out += " in " + l.function;
  return out;
}

std::string Report::to_json() const {
  std::ostringstream os;
  {
    Object root(os);
    put_array(root, "findings", findings_,
              [](std::ostream &o, const Finding &f) {
                Object obj(o);
                obj.str("kind", f.kind);
                obj.str("message", f.message);
                obj.num("bytes", f.bytes);
                obj.strs("devices", f.devices);
                obj.strs("tensors", f.tensors);
                obj.str("op", f.op);
                obj.str("module", f.module);
                obj.strs("details", f.details);
                obj.str("function", f.location.function);
                obj.str("file", f.location.file);
                obj.num("line", f.location.line);
                obj.num("count", f.count);
                obj.num("first", f.first);
                obj.num("last", f.last);
              });
    put_array(root, "shared", shared_,
              [](std::ostream &o, const SharedStorage &s) {
                Object obj(o);
                obj.str("device", s.device);
                obj.num("bytes", s.bytes);
                obj.strs("tensors", s.tensors);
              });
    put_array(root, "devices", devices_,
              [](std::ostream &o, const DeviceMemory &d) {
                Object obj(o);
                obj.str("device", d.device);
                obj.num("reachable_bytes", d.reachable_bytes);
                obj.num("allocated_bytes", d.allocated_bytes);
                obj.num("reserved_bytes", d.reserved_bytes);
                obj.num("reserved_unused_bytes", d.reserved_unused_bytes);
                obj.num("largest_free_block", d.largest_free_block);
              });
    put_array(root, "copies", copies_, [](std::ostream &o, const CopyRoute &c) {
      Object obj(o);
      obj.str("src_device", c.src_device);
      obj.str("dst_device", c.dst_device);
      obj.str("dtype", c.dtype);
      obj.num("count", c.count);
      obj.num("bytes", c.bytes);
    });
    put_array(root, "skipped", skipped_, [](std::ostream &o, const Skipped &s) {
      Object obj(o);
      obj.str("tensor", s.tensor);
      obj.str("reason", s.reason);
    });
    // Keys of inspect_distributed() reports only: single-process JSON stays as
    // it was.
    if (!ranks_.empty()) {
      put_array(root, "ranks", ranks_,
                [](std::ostream &o, const RankMemory &m) {
                  Object obj(o);
                  obj.num("rank", m.rank);
                  obj.str("host", m.host);
                  obj.str("device", m.device);
                  obj.num("reachable_bytes", m.reachable_bytes);
                  obj.num("allocated_bytes", m.allocated_bytes);
                  obj.num("reserved_bytes", m.reserved_bytes);
                });
      put_array(root, "replicated", replicated_,
                [](std::ostream &o, const Replicated &r) {
                  Object obj(o);
                  obj.str("category", r.category);
                  obj.num("ranks", r.ranks);
                  obj.num("bytes_per_rank", r.bytes_per_rank);
                  obj.num("storages", r.storages);
                  obj.key("expected") << (r.expected ? "true" : "false");
                  obj.strs("tensors", r.tensors);
                });
      char skew[32];
      std::snprintf(skew, sizeof skew, "%.4f", rank_skew());
      root.key("rank_skew") << skew;
    }
    // Observer reports on an allocator that reports its events only.
    if (!timelines_.empty())
      put_array(root, "timelines", timelines_, put_timeline);
    root.num("host_syncs", host_syncs_);
    root.num("wasted_bytes", wasted_bytes());
  }
  return os.str();
}

std::ostream &operator<<(std::ostream &os, const Finding &f) {
  os << "devcopy: " << f.kind << ": " << format_bytes(f.bytes) << '\n';
  os << "    " << f.message << '\n';
  print_list(os, "tensors", f.tensors);
  print_list(os, "devices", f.devices);
  if (!f.op.empty())
    os << "    op: " << f.op << '\n';
  if (!f.module.empty())
    os << "    module: " << f.module << '\n';
  if (f.location.known())
    os << "    at: " << location_text(f.location) << '\n';
  if (f.count > 1)
    os << "    " << f.count << " times, copies #" << f.first << " to #"
       << f.last << '\n';
  for (const std::string &d : f.details)
    os << "      " << d << '\n';
  return os;
}

std::ostream &operator<<(std::ostream &os, const Report &r) {
  for (const Finding &f : r.findings())
    os << f << '\n';
  for (const SharedStorage &s : r.shared()) {
    os << "devcopy: info: shared storage, " << format_bytes(s.bytes) << " on "
       << s.device << ", counted once\n";
    print_list(os, "tensors", s.tensors);
  }
  for (const DeviceMemory &d : r.devices()) {
    os << "devcopy: memory on " << d.device << ": "
       << format_bytes(d.reachable_bytes) << " reachable";
    if (d.allocated_bytes >= 0)
      os << ", " << format_bytes(d.allocated_bytes) << " allocated, "
         << format_bytes(d.reserved_bytes) << " reserved ("
         << format_bytes(d.reserved_unused_bytes)
         << " unused, largest free block " << format_bytes(d.largest_free_block)
         << ")";
    os << '\n';
  }
  for (const Replicated &x : r.replicated())
    if (x.expected)
      os << "devcopy: info: " << x.category << " replicated on all " << x.ranks
         << " ranks, " << format_bytes(x.bytes_per_rank) << " per rank in "
         << x.storages << " storages (expected under data parallelism)\n";
  for (const RankMemory &m : r.ranks()) {
    os << "devcopy: rank " << m.rank << " (" << m.host << ") memory on "
       << m.device << ": " << format_bytes(m.reachable_bytes) << " reachable";
    if (m.allocated_bytes >= 0)
      os << ", " << format_bytes(m.allocated_bytes) << " allocated, "
         << format_bytes(m.reserved_bytes) << " reserved";
    os << '\n';
  }
  if (!r.ranks().empty()) {
    const auto total = reachable_per_rank(r.ranks());
    auto [lo, hi] = std::minmax_element(
        total.begin(), total.end(),
        [](const auto &a, const auto &b) { return a.second < b.second; });
    char skew[32];
    std::snprintf(skew, sizeof skew, "%.2fx", r.rank_skew());
    os << "devcopy: rank memory skew " << (lo->second > 0 ? skew : "unbounded")
       << ": rank " << hi->first << " holds " << format_bytes(hi->second)
       << " reachable, rank " << lo->first << " " << format_bytes(lo->second)
       << '\n';
  }
  for (const DeviceTimeline &t : r.timelines())
    print_timeline(os, t);
  for (const CopyRoute &c : r.copies())
    os << "devcopy: copies " << c.src_device << " -> " << c.dst_device << " ("
       << c.dtype << "): " << c.count << ", " << format_bytes(c.bytes) << '\n';
  if (r.host_syncs() > 0)
    os << "devcopy: device-to-host syncs: " << r.host_syncs() << '\n';
  for (const Skipped &s : r.skipped())
    os << "devcopy: skipped " << s.tensor << ": " << s.reason << '\n';
  os << "devcopy: summary: " << r.findings().size()
     << (r.findings().size() == 1 ? " finding, " : " findings, ")
     << format_bytes(r.wasted_bytes()) << " wasted\n";
  return os;
}

} // namespace devcopy

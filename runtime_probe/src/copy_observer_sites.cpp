#include "copy_observer_sites.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace devcopy::observer {
namespace {

std::string key(Verdict verdict, const CopyEvent &e, std::uint64_t stack) {
  std::string k;
  k.reserve(96);
  k += static_cast<char>('0' + static_cast<int>(verdict));
  k += std::to_string(stack);
  k += ':' + std::to_string(e.where.line);
  k += ':' + std::to_string(e.made_at) + ':' + std::to_string(e.freed_at);
  for (const std::string *part :
       {&e.module, &e.op, &e.src_device, &e.dst_device, &e.dtype, &e.tensor,
        &e.where.file, &e.where.function}) {
    k += '\x1f';
    k += *part;
  }
  return k;
}

Finding make(const Site &s) {
  switch (s.verdict) {
  case Verdict::discarded:
    return discarded_copy(s.event);
  case Verdict::pinned_block_held:
    return pinned_block_held(s.event);
  case Verdict::pageable_non_blocking:
    return pageable_non_blocking(s.event);
  case Verdict::transient:
    return transient_device_copy(s.event);
  }
  return {};
}

} // namespace

SourceLocation Symbols::get(const Stack &stack) {
  const std::uint64_t h = stack.hash();
  if (!h)
    return {};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(h);
    if (it != cache_.end())
      return it->second;
  }
  SourceLocation where = user_frame(stack);
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() >= kMax)
    cache_.clear();
  cache_.emplace(h, where);
  return where;
}

void Sites::add(Verdict verdict, const CopyEvent &event, const Stack *stack,
                std::uint64_t ordinal) {
  const std::uint64_t h = stack ? stack->hash() : 0;
  std::string k = key(verdict, event, h);
  auto it = sites_.find(k);
  if (it == sites_.end()) {
    if (sites_.size() >= kMax) {
      overflowed_ = true;
      CopyEvent any;
      any.op = "copies";
      any.src_device = any.dst_device = any.dtype = "various";
      any.shape = "various";
      k = key(verdict, any, 0);
      it = sites_.find(k);
      if (it == sites_.end())
        it = sites_.emplace(k, Site{verdict, any, {}, 0, 0, ordinal, 0}).first;
    } else {
      Site site{verdict, event, {}, 0, 0, ordinal, 0};
      if (stack)
        site.stack = *stack;
      it = sites_.emplace(std::move(k), std::move(site)).first;
    }
  }
  Site &s = it->second;
  ++s.count;
  s.bytes += event.bytes;
  // Verdicts arrive when copies are freed or settled, not in copy order:
  // the site shows its earliest copy (the overflow site keeps "various").
  if (ordinal < s.first && !overflowed_) {
    s.event = event;
    if (stack)
      s.stack = *stack;
  }
  s.first = std::min(s.first, ordinal);
  s.last = std::max(s.last, ordinal);
}

std::vector<Site> Sites::snapshot() const {
  std::vector<Site> out;
  out.reserve(sites_.size());
  for (const auto &[k, s] : sites_)
    out.push_back(s);
  return out;
}

std::vector<Finding> site_findings(const std::vector<Site> &sites,
                                   Symbols &symbols) {
  // Merge by what the user sees: verdict, location, module, op, route, dtype.
  using Key =
      std::tuple<int, std::string, int, std::string, std::string, std::string,
                 std::string, std::string, std::string, std::string>;
  std::map<Key, Finding> merged;
  for (const Site &s : sites) {
    // Freed on another line of the frame it shared with the copy: stored.
    if (s.event.freed_at && !same_line(s.event.made_at, s.event.freed_at))
      continue;
    const SourceLocation where =
        s.event.where.known() ? s.event.where : symbols.get(s.stack);
    const Key k{static_cast<int>(s.verdict),
                where.file,
                where.line,
                where.function,
                s.event.module,
                s.event.op,
                s.event.src_device,
                s.event.dst_device,
                s.event.dtype,
                s.event.tensor};
    auto it = merged.find(k);
    if (it == merged.end()) {
      Finding f = make(s);
      f.location = where;
      f.count = s.count;
      f.bytes = s.bytes;
      f.first = static_cast<std::int64_t>(s.first);
      f.last = static_cast<std::int64_t>(s.last);
      merged.emplace(k, std::move(f));
      continue;
    }
    Finding &f = it->second;
    f.count += s.count;
    f.bytes += s.bytes;
    f.first =
        std::min<std::int64_t>(f.first, static_cast<std::int64_t>(s.first));
    f.last = std::max<std::int64_t>(f.last, static_cast<std::int64_t>(s.last));
  }
  std::vector<Finding> out;
  out.reserve(merged.size());
  for (auto &[k, f] : merged)
    out.push_back(std::move(f));
  std::stable_sort(
      out.begin(), out.end(),
      [](const Finding &a, const Finding &b) { return a.first < b.first; });
  for (Finding &f : out)
    if (f.count > 1)
      f.message += " (" + std::to_string(f.count) + " times, " +
                   format_bytes(f.bytes) + " in all)";
  return out;
}

} // namespace devcopy::observer

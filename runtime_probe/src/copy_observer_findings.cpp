// The wording of the copy observer's findings: what was copied, where to, how
// many bytes, and what to do instead.
#include "copy_observer_findings.h"

#include <devcopy/rules_catalog.h>

namespace devcopy::observer {
namespace {

// "a float [64, 1024] tensor", or its watched name.
std::string what(const std::string &tensor, const std::string &dtype,
                 const std::string &shape) {
  if (!tensor.empty())
    return tensor + " (" + dtype + " " + shape + ")";
  return "a " + dtype + " " + shape + " tensor";
}

Finding base(std::string_view kind, const CopyEvent &e) {
  Finding f;
  f.kind = std::string(kind);
  f.bytes = e.bytes;
  f.devices = {e.src_device, e.dst_device};
  if (!e.tensor.empty())
    f.tensors = {e.tensor};
  f.op = e.op;
  f.module = e.module;
  return f;
}

std::string where(const CopyEvent &e) {
  return e.module.empty() ? std::string() : " in " + e.module;
}

} // namespace

Finding discarded_copy(const CopyEvent &e) {
  Finding f = base(rules::kDiscardedCopy, e);
  f.message = e.op + where(e) + " copied " + format_bytes(e.bytes) + " of " +
              what(e.tensor, e.dtype, e.shape) + " from " + e.src_device +
              " to " + e.dst_device +
              " and the result was freed unread while the source stayed alive: "
              "the copy "
              "freed nothing; drop it, or keep and use its result";
  if (e.src_device != e.dst_device && e.dst_device == "cpu")
    f.details.push_back("to offload activations, save them through autograd "
                        "(saved-tensor hooks), not by "
                        "copying and dropping");
  return f;
}

Finding pinned_block_held(const CopyEvent &e) {
  Finding f = base(rules::kIneffectiveNonBlocking, e);
  f.message = "discarded non-blocking " + e.op + where(e) + " of " +
              format_bytes(e.bytes) + " from " + e.src_device +
              " to pinned host memory: the pinned block stays cached by the "
              "caching host "
              "allocator, invisible in GPU memory stats; drop the copy";
  f.details.push_back(
      "the block is reused by later pinned copies but returned to the "
      "system only when the host allocator's cache is emptied");
  return f;
}

Finding pageable_non_blocking(const CopyEvent &e) {
  Finding f = base(rules::kIneffectiveNonBlocking, e);
  const bool to_host = e.dst_device == "cpu";
  f.message =
      "non_blocking " + e.op + where(e) + " of " + format_bytes(e.bytes) +
      " from " +
      (to_host ? e.src_device + " to pageable host memory"
               : "pageable host memory to " + e.dst_device) +
      " is synchronous anyway: " +
      (to_host
           ? "copy into a pinned buffer, or drop non_blocking"
           : "pin the host tensor once (pin_memory()), or drop non_blocking");
  return f;
}

Finding transient_device_copy(const CopyEvent &e) {
  Finding f = base(rules::kTransientDeviceCopy, e);
  f.message =
      e.op + where(e) + " copied " + format_bytes(e.bytes) + " from " +
      e.src_device + " to a temporary on " + e.dst_device +
      " that was only copied into " + e.into +
      " there and then freed: " + e.dst_device +
      " held both at once; copy from the host straight into the destination";
  f.details.push_back("loading a checkpoint: torch.load(f, map_location='cpu') "
                      "(or mmap=True), then "
                      "load_state_dict; in C++: dst.copy_(host_tensor), not "
                      "dst.copy_(host_tensor.to(device))");
  return f;
}

Finding stale_after_move(const MoveEvent &e, std::int64_t bytes) {
  Finding f;
  f.kind = std::string(rules::kStaleAfterMove);
  f.bytes = bytes;
  f.devices = {e.old_device};
  if (!e.tensor.empty())
    f.tensors = {e.tensor};
  f.op = "aten::set_data";
  f.module = e.module;
  f.message = "moving " + what(e.tensor, e.dtype, e.shape) + " from " +
              e.old_device + " to " + e.new_device +
              " left its old storage of " + format_bytes(bytes) + " on " +
              e.old_device +
              " alive: something else still references it (a detached alias, a "
              "view, an old "
              "module); drop that reference, or take it after the move";
  return f;
}

} // namespace devcopy::observer

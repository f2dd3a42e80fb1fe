"""One module per rule; each names its id in RULE and defines the hooks it
needs: on_call(walk, call, qualified_name, method, receiver_kind),
on_expr_stmt(walk, stmt, kind), on_comprehension(walk, node, generator),
on_format(walk, node, value) (a value formatted into a string), on_file_end(walk)."""
from . import (checkpoint_to_device, copy_in_loop, create_then_move, discarded_copy,
               host_sync_in_loop, redundant_chain, repeated_module_move)

ALL = (discarded_copy, repeated_module_move, create_then_move, copy_in_loop,
       host_sync_in_loop, redundant_chain, checkpoint_to_device)

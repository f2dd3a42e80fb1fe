"""devcopy.inspect_distributed over torch.distributed: two CPU ranks through
Gloo on 127.0.0.1, spawned by the test."""
import json
import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import devcopy


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank, world, port, same_data, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 8))
        opt = torch.optim.Adam(model.parameters()) if same_data else torch.optim.SGD(
            model.parameters(), lr=0.1)
        torch.manual_seed(0 if same_data else 1 + rank)
        model(torch.randn(16, 64)).pow(2).sum().backward()  # gradients depend on the data
        opt.step()
        before = {k: v.clone() for k, v in model.state_dict().items()}
        report = devcopy.inspect_distributed(model, roots={"opt": opt}, timeout=30)
        with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
            f.write(report.to_json())
        after = model.state_dict()
        unchanged = all(torch.equal(after[k], before[k]) for k in before)
        with open(os.path.join(out_dir, f"rank{rank}.unchanged"), "w") as f:
            f.write(str(unchanged))
    finally:
        dist.destroy_process_group()


def _run(tmp_path, same_data):
    mp.spawn(_rank, args=(2, _free_port(), same_data, str(tmp_path)), nprocs=2, join=True)
    for r in range(2):  # inspect_distributed only reads
        assert (tmp_path / f"rank{r}.unchanged").read_text() == "True"
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]


def _kinds(report):
    return [f["kind"] for f in report["findings"]]


def test_replicated_optimizer_state_is_reported_on_every_rank(tmp_path):
    reports = _run(tmp_path, same_data=True)
    for r in reports:
        assert "replicated-across-ranks" in _kinds(r), r["findings"]
        by_category = {x["category"]: x for x in r["replicated"]}
        state = by_category["optimizer state"]
        # Adam keeps exp_avg and exp_avg_sq (and a step) per parameter:
        # at least twice the parameters' float bytes, identical on both ranks.
        params = (64 * 64 + 64 + 64 * 8 + 8) * 4
        assert state["bytes_per_rank"] >= 2 * params
        assert by_category["parameters"]["expected"] is True
        # Same data, same gradients: counted as gradients, not as parameters.
        assert by_category["gradients"]["bytes_per_rank"] == params
        assert by_category["gradients"]["expected"] is False
        assert len(r["ranks"]) == 2


def test_different_data_replicates_nothing_but_parameters(tmp_path):
    reports = _run(tmp_path, same_data=False)
    for r in reports:
        assert "replicated-across-ranks" not in _kinds(r), r["findings"]
        categories = {x["category"] for x in r["replicated"]}
        assert "gradients" not in categories and "optimizer state" not in categories


def test_without_a_process_group_the_error_says_what_to_do():
    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")
    with pytest.raises(RuntimeError, match="init_process_group"):
        devcopy.inspect_distributed(torch.nn.Linear(2, 2))

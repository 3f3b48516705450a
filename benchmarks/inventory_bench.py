"""Timing sanity check of the inventory validation (``hybridgpu.inventory``).

Prints figures; asserts nothing. Run from the project root::

    .venv/bin/python benchmarks/inventory_bench.py [--sizes 10,100,1000,10000] [--repeat 5]

For each size N it generates a valid site of N hosts (3 control-plane hosts, then DGX-like
8 x H100-80GB gpu-workers, A100-80GB gpu-workers with the sample's two MIG layouts, and
cpu-workers, cycling; networks widened to /16 so that 10,000 hosts fit), and times with
``time.perf_counter`` (median of ``--repeat`` runs after one warm-up, ``gc.collect()`` before each):

* **validate**: :func:`hybridgpu.inventory.inventory_from_documents` on the already parsed
  documents: pydantic models plus every rule of :mod:`hybridgpu.inventory.checks`.
* **load**: :func:`hybridgpu.inventory.load_inventory` on the YAML file written to a temporary
  directory: read, parse (libyaml when PyYAML has it) and validate.
* **broken**: validate after breaking 1% of the hosts (duplicate address, unknown GPU model,
  unplaceable MIG layout), which also builds the :class:`InventoryError`.

The goal is 10,000 hosts validated in well under 2 s.
"""

from __future__ import annotations

import argparse
import copy
import gc
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hybridgpu.inventory import InventoryError, inventory_from_documents, load_inventory  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "stacks" / "inventory" / "onprem-site-a.yaml"


def _site() -> dict[str, Any]:
    site = next(yaml.safe_load_all(SAMPLE.read_text()))
    site["networks"] = [
        {"name": "mgmt", "cidr": "10.20.0.0/16", "purpose": "management"},
        {"name": "data", "cidr": "10.21.0.0/16", "purpose": "data"},
        {"name": "bmc", "cidr": "10.30.0.0/16", "purpose": "bmc"},
        {"name": "ib-ipoib", "cidr": "10.22.0.0/16", "purpose": "infiniband"},
    ]
    return site


def _ip(prefix: str, i: int) -> str:
    return f"{prefix}.{1 + i // 250}.{1 + i % 250}"


def generate(n: int) -> list[dict[str, Any]]:
    """The documents (Site, HostList) of a valid site with ``n`` hosts (n >= 3)."""
    hosts = []
    for i in range(n):
        host: dict[str, Any] = {
            "hostname": f"node-{i:05d}",
            "addresses": {"management": _ip("10.20", i), "data": _ip("10.21", i), "bmc": _ip("10.30", i)},
            "role": "control-plane" if i < 3 else ("cpu-worker" if i % 4 == 3 else "gpu-worker"),
            "ssh": {"user": "ubuntu", "keySecret": {"env": "SITE_SSH_KEY"}},
            "rack": f"r{i // 16:03d}",
            "labels": {"hybridgpu.io/pool": "training"},
            "state": "active",
        }
        if host["role"] == "gpu-worker":
            host["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
            if i % 4 == 0:
                host["gpu"] = {"model": "H100-80GB", "count": 8, "pciIds": [f"00000000:{b:02X}:00.0" for b in (0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF)]}
                host["network"] = {"fabric": "infiniband", "notes": "8 x NDR"}
            elif i % 4 == 1:
                host["gpu"] = {"model": "A100-80GB", "count": 8, "migLayouts": [{"gpus": "all", "layout": {"3g.40gb": 2}}]}
            else:
                host["gpu"] = {
                    "model": "A100-80GB",
                    "count": 8,
                    "migLayouts": [
                        {"gpus": [0, 1, 2, 3], "layout": {"1g.10gb": 7}},
                        {"gpus": [4, 5], "layout": {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}},
                        {"gpus": [6], "layout": {"4g.40gb": 1, "3g.40gb": 1}},
                    ],
                }
        hosts.append(host)
    host_list = {"apiVersion": "hybridgpu.io/v1alpha1", "kind": "HostList", "metadata": {"site": "site-a"}, "hosts": hosts}
    return [_site(), host_list]


def broken(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy with 1% of the hosts broken in three ways (address, GPU model, MIG layout)."""
    docs = copy.deepcopy(docs)
    hosts = docs[1]["hosts"]
    step = max(1, len(hosts) // max(1, len(hosts) // 100))
    for k, i in enumerate(range(5, len(hosts), step)):
        host = hosts[i]
        if k % 3 == 0:
            host["addresses"]["management"] = hosts[0]["addresses"]["management"]
        elif k % 3 == 1 and "gpu" in host:
            host["gpu"]["model"] = "H100-80G"
        elif "gpu" in host:
            host["gpu"]["migLayouts"] = [{"gpus": "all", "layout": {"4g.40gb": 2}}]
    return docs


def timed(fn, repeat: int) -> tuple[float, float]:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000,10000", help="comma-separated host counts")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per figure (median shown)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"python {platform.python_version()}, {platform.machine()}, libyaml={yaml.__with_libyaml__}, repeat={args.repeat}")
    print(f"{'hosts':>6}  {'validate median':>15}  {'min':>9}  {'per host':>9}  {'load (file) median':>18}  {'broken 1% median':>16}  issues")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            docs = generate(max(3, n))
            pairs = [("generated.yaml", docs)]
            inventory = inventory_from_documents(pairs)
            assert len(inventory.hosts) == max(3, n)
            path = Path(tmp) / f"site-{n}.yaml"
            path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
            bad = [("generated.yaml", broken(docs))]

            def validate_broken(bad=bad) -> int:
                try:
                    inventory_from_documents(bad)
                except InventoryError as exc:
                    return len(exc.issues)
                return 0

            v_med, v_min = timed(lambda pairs=pairs: inventory_from_documents(pairs), args.repeat)
            l_med, _ = timed(lambda path=path: load_inventory(path), args.repeat)
            b_med, _ = timed(validate_broken, args.repeat)
            print(
                f"{n:>6}  {v_med * 1e3:>12.1f} ms  {v_min * 1e3:>6.1f} ms  {v_med / n * 1e6:>6.1f} us  "
                f"{l_med * 1e3:>15.1f} ms  {b_med * 1e3:>13.1f} ms  {validate_broken()}"
            )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes examples/federation/three-regions.yaml: the 3-region evaluation
federation of docs/results/federation.md.

Real parts: the three member clusters (shared data: openb node list, PAI
machine table, Helios' Philly VCs), GPU prices (public cloud list prices) and
inter-region round-trip times and egress prices (public cloud figures); the
sources are in the file's comments. Synthetic parts (marked so in the file):
the link bandwidths, the prices of Alibaba's anonymized G2/G3 cards, the
tenants' home regions and every dataset. Datasets: four per Philly VC, sizes
lognormal with median 50 GiB and sigma 1.5 (clipped to 1 GiB .. 4 TiB), one
replica in the tenant's home region (plus a second, in the next region, for
one dataset in five), read staged with probability 3/4 else streamed; drawn
with Python's random.Random(2017).

  python3 scripts/federation-example.py > examples/federation/three-regions.yaml
"""
import math
import random

HOMES = {
    "region-a": ["ee9e8c", "7f04ca", "2869ce", "ed69ec", "23dbec"],
    "region-b": ["b436b2", "6214e9", "0e4a51", "e13805", "51b7ef"],
    "region-c": ["6c71a0", "103959", "11cb48", "925e2b", "795a4c"],
}
REGIONS = list(HOMES)

HEADER = """\
# The 3-region evaluation federation (docs/results/federation.md), written by
# scripts/federation-example.py. Paths are relative to the repository root, as
# in the other examples (shared data at ../shared/data).
#
# Members (real cluster shapes):
#   region-a  openb      Alibaba GPU cluster 2023, openb node list: 6,212 GPUs
#   region-b  pai        Alibaba PAI 2020 machine table: 6,742 GPUs
#   region-c  philly     Helios' model of Microsoft Philly (11 VCs): 2,816 GPUs
#
# GPU prices, USD per GPU-hour, on-demand list prices:
#   P100 1.46, V100 (16 and 32 GB) 2.48, T4 0.35, K80 (PAI's MISC) 0.45:
#     Google Cloud "GPU pricing" (GPUs attached to VMs, us-central1)
#   A10 1.006: AWS EC2 g5.xlarge (one A10G), us-east-1
#   G2 1.20, G3 1.80: SYNTHETIC (Alibaba anonymizes these types; set between
#     T4 and V100)
# Links:
#   rtt_ms: a-b 35 (intra-Asia), a-c and b-c 190 (trans-Pacific): typical
#     inter-region round-trip times published by cloud providers' latency
#     dashboards (e.g. AWS ap-northeast-1 / ap-east-1 ~35-50 ms; Asia - us-east
#     ~180-200 ms)
#   egress_usd_per_gb: out of an Asian region 0.09, out of us-east 0.02: AWS EC2
#     "Data Transfer OUT to other AWS regions" (Asia Pacific Tokyo/Hong Kong
#     0.09, US East 0.02)
#   bandwidth_gbps: SYNTHETIC, 10 Gbit/s per region pair (the size of one AWS
#     Direct Connect / GCP Interconnect port), one transfer at a time
# Tenants and datasets: SYNTHETIC (see scripts/federation-example.py): each
#   Philly VC has a home region holding its four datasets.
name: three-regions
description: openb (A), PAI (B) and Philly (C) federated; synthetic data placement
dispatcher_region: region-a
digest_interval_s: 10
lease_s: 60
# Philly's trace durations were measured on Philly's own 12/24 GB cards; the
# model reads them as P100 time and scales run times by card speed.
trace_reference_type: P100
intra_region: {bandwidth_gbps: 100, rtt_ms: 1, egress_usd_per_gb: 0}

regions:
  - name: region-a
    clusters:
      - name: openb
        cluster: ../shared/data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv
        failure_domain: a-1
        gpu_prices: {P100: 1.46, V100M16: 2.48, V100M32: 2.48, T4: 0.35, A10: 1.006, G2: 1.20, G3: 1.80}
  - name: region-b
    clusters:
      - name: pai
        cluster: ../shared/data/alibaba-pai-gpu-v2020/pai_machine_spec.tar.gz
        failure_domain: b-1
        gpu_prices: {P100: 1.46, V100: 2.48, V100M32: 2.48, T4: 0.35, MISC: 0.45}
  - name: region-c
    clusters:
      - name: philly
        cluster: 352x8:P100/leaf=32   # Helios-Philly-shaped: 352 nodes x 8 GPUs (helios/philly_vc.csv), pooled
        failure_domain: c-1
        gpu_prices: {P100: 1.46}

links:
  - {from: region-a, to: region-b, bandwidth_gbps: 10, rtt_ms: 35, egress_usd_per_gb: 0.09}
  - {from: region-b, to: region-a, bandwidth_gbps: 10, rtt_ms: 35, egress_usd_per_gb: 0.09}
  - {from: region-a, to: region-c, bandwidth_gbps: 10, rtt_ms: 190, egress_usd_per_gb: 0.09}
  - {from: region-c, to: region-a, bandwidth_gbps: 10, rtt_ms: 190, egress_usd_per_gb: 0.02}
  - {from: region-b, to: region-c, bandwidth_gbps: 10, rtt_ms: 190, egress_usd_per_gb: 0.09}
  - {from: region-c, to: region-b, bandwidth_gbps: 10, rtt_ms: 190, egress_usd_per_gb: 0.02}
"""


def main():
    rng = random.Random(2017)
    out = [HEADER, "\n# SYNTHETIC: sizes lognormal(median 50 GiB, sigma 1.5), replicas and read patterns drawn.\n",
           "datasets:\n"]
    tenants = []
    for ri, region in enumerate(REGIONS):
        for vc in HOMES[region]:
            names = []
            for k in range(4):
                size = min(4096.0, max(1.0, 50.0 * math.exp(rng.gauss(0, 1.5))))
                replicas = [region]
                if rng.random() < 0.2:
                    replicas.append(REGIONS[(ri + 1) % len(REGIONS)])
                read = "staged" if rng.random() < 0.75 else "streamed"
                name = f"{vc}-d{k}"
                names.append(name)
                out.append(f"  - {{name: {name}, size_gib: {size:.1f}, regions: [{', '.join(replicas)}], "
                           f"read: {read}}}\n")
            tenants.append((vc, region, names))
    out.append("\n# SYNTHETIC: each Philly VC's home region; a job that names no dataset reads one of its VC's.\n")
    out.append("tenants:\n")
    for vc, region, names in tenants:
        out.append(f"  - {{name: {vc}, home: {region}, datasets: [{', '.join(names)}]}}\n")
    print("".join(out), end="")


if __name__ == "__main__":
    main()

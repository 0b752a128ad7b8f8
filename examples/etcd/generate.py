#!/usr/bin/env python3
"""Writes the example Etcds of examples/etcd/ as gardenlet writes them when it
creates a shoot's control plane (gardener pkg/gardenlet/operation/botanist/etcd.go,
pkg/component/etcd/etcd/etcd.go): `etcd-main` (25Gi, backed up into the seed's
BackupBucket) and `etcd-events` (10Gi, no backup) of each example shoot in
examples/objects/, with `spec.storageClass` unset (gardenlet's value is nil
unless configured) - the fields the seedprovider webhook then sets.

The values scion never reads (TLS secret names, resources, schedules) are
gardenlet's shapes with this example's names. Run from the repository root:
python3 examples/etcd/generate.py
"""
import json

# provider -> (backup provider name in druid's StoreSpec, BackupBucket name)
PROVIDERS = {
    "alicloud": ("OSS", "4b1d6c1e-6a0f-4f3e-9d43-1c7a0e9b0a11"),
    "aws": ("S3", "8f2a4c7e-3b1d-4e5f-a6c7-9d8e1f2a3b4c"),
    "azure": ("ABS", "2c9e7b1a-5d4f-4a3b-8c2d-1e0f9a8b7c6d"),
    "gcp": ("GCS", "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d"),
    "openstack": ("Swift", "5e4d3c2b-1a09-4f8e-b7d6-c5b4a3928170"),
}
SHOOT_UID = "0d9c5b8e-2f4a-4c6b-9e1d-3a7f8b2c4d6e"


def etcd(provider, role):
    namespace = f"shoot--dev--{provider}"
    store_provider, bucket = PROVIDERS[provider]
    labels = {"gardener.cloud/role": "controlplane", "role": role}
    spec = {
        "replicas": 1,
        "priorityClassName": "gardener-system-500",
        "labels": {
            "app": "etcd-statefulset",
            "gardener.cloud/role": "controlplane",
            "networking.gardener.cloud/to-dns": "allowed",
            "networking.gardener.cloud/to-private-networks": "allowed",
            "networking.gardener.cloud/to-public-networks": "allowed",
            "networking.gardener.cloud/to-runtime-apiserver": "allowed",
            "role": role,
        },
        "selector": {"matchLabels": {"app": "etcd-statefulset", **labels}},
        "etcd": {
            "clientUrlTls": {
                "tlsCASecretRef": {"name": "ca-etcd-bundle-6a5f3c21", "namespace": namespace, "dataKey": "bundle.crt"},
                "serverTLSSecretRef": {"name": f"etcd-server-{role}-7c1e9a02", "namespace": namespace},
                "clientTLSSecretRef": {"name": "etcd-client-3b8d4f17", "namespace": namespace},
            },
            "clientPort": 2379 if role == "main" else 2383,
            "serverPort": 2380 if role == "main" else 2384,
            "wrapperPort": 9095 if role == "main" else 9097,
            "metrics": "basic" if role == "main" else "extensive",
            "defragmentationSchedule": "34 1 */3 * *",
            "quota": "8Gi",
            "resources": {"requests": {"cpu": "300m", "memory": "1G"}},
        },
        "backup": {
            "port": 8080 if role == "main" else 8081,
            "resources": {"requests": {"cpu": "10m", "memory": "40Mi"}},
            "garbageCollectionPolicy": "Exponential",
            "garbageCollectionPeriod": "12h0m0s",
            "compression": {"enabled": True, "policy": "gzip"},
        },
        "storageCapacity": "25Gi" if role == "main" else "10Gi",
        "volumeClaimTemplate": f"{role}-etcd",
    }
    if role == "main":
        spec["backup"].update({
            "store": {
                "secretRef": {"name": "etcd-backup"},
                "container": bucket,
                "provider": store_provider,
                "prefix": f"{namespace}--{SHOOT_UID}/etcd-main",
            },
            "fullSnapshotSchedule": "27 3 * * *",
            "deltaSnapshotPeriod": "5m0s",
            "deltaSnapshotMemoryLimit": "100Mi",
        })
    return {
        "apiVersion": "druid.gardener.cloud/v1alpha1",
        "kind": "Etcd",
        "metadata": {
            "name": f"etcd-{role}",
            "namespace": namespace,
            "labels": labels,
            "annotations": {
                "gardener.cloud/operation": "reconcile",
                "gardener.cloud/timestamp": "2026-08-21T10:12:13.456789012Z",
                "resources.druid.gardener.cloud/allow-unhealthy-pod-eviction": "",
            },
        },
        "spec": spec,
    }


for provider in PROVIDERS:
    for role in ("main", "events"):
        with open(f"examples/etcd/{provider}-etcd-{role}.json", "w") as f:
            json.dump(etcd(provider, role), f, indent=2)
            f.write("\n")

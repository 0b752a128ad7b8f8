#!/usr/bin/env python3
"""Writes the example OperatingSystemConfigs of examples/osc/ as gardenlet
writes them (gardener pkg/component/extensions/operatingsystemconfig): the
`-original` OSC (purpose reconcile) and the `-init` OSC (purpose provision)
of the pool `worker-general` of each example shoot in examples/objects/.

The kubelet unit is gardenlet's (no blank lines between sections, no final
newline, one flag per continuation line), the kubelet configuration the
b64 YAML sigs.k8s.io/yaml writes, the sysctl file gardenlet's defaults
sorted by key. The other components gardenlet adds to every `-original` OSC
(root certificates, journald, sshd ensurer, valitail, the SSH user) are there
with gardenlet's paths, unit names, encodings, permissions and commands, so
that the object has the size and shape of a real one (about 30 KB, most of it
base64): their contents, which scion never reads, are stand-ins of about the
real size (certificates are pseudo-random PEM, scripts are comments).

It also writes examples/reviews/aws-operatingsystemconfig.json: gardenlet's
UPDATE of the aws `-original` OSC as the API server sends it to the webhook,
whose `oldObject` is the OSC as stored after the webhook's previous pass
(computed with `scion mutate`, so build scion first). Run from the
repository root: python3 examples/osc/generate.py
"""
import base64
import copy
import hashlib
import json
import subprocess

PROVIDERS = {
    "alicloud": ("shoot--dev--alicloud", "1.33.4"),
    "aws": ("shoot--dev--aws", "1.33.4"),
    "azure": ("shoot--dev--azure", "1.33.4"),
    "gcp": ("shoot--dev--gcp", "1.33.4"),
    "openstack": ("shoot--dev--openstack", "1.33.4"),
}
POOL = "worker-general"

SYSCTL = {
    "fs.aio-max-nr": "262144", "fs.file-max": "20000000",
    "fs.inotify.max_user_instances": "8192", "fs.inotify.max_user_watches": "524288",
    "kernel.panic": "10", "kernel.panic_on_oops": "1", "kernel.softlockup_all_cpu_backtrace": "1",
    "kernel.softlockup_panic": "1", "net.core.netdev_max_backlog": "16384",
    "net.core.rmem_max": "16777216", "net.core.somaxconn": "32768", "net.core.wmem_max": "16777216",
    "net.ipv4.conf.all.forwarding": "1", "net.ipv4.conf.default.forwarding": "1",
    "net.ipv4.conf.default.log_martians": "1", "net.ipv4.ip_local_port_range": "32768 65535",
    "net.ipv4.tcp_max_syn_backlog": "8096", "net.ipv4.tcp_retries2": "8",
    "net.ipv4.tcp_rmem": "4096 12582912 16777216", "net.ipv4.tcp_slow_start_after_idle": "0",
    "net.ipv4.tcp_tw_reuse": "1", "net.ipv4.tcp_wmem": "4096 12582912 16777216",
    "net.ipv6.conf.all.forwarding": "1", "net.ipv6.conf.default.forwarding": "1",
    "vm.max_map_count": "135217728", "vm.memory_failure_early_kill": "1", "vm.overcommit_memory": "1",
    "vm.panic_on_oom": "0",
}

KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 2m0s
    enabled: true
  x509:
    clientCAFile: /var/lib/kubelet/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 5m0s
    cacheUnauthorizedTTL: 30s
cgroupDriver: systemd
cgroupRoot: /
cgroupsPerQOS: true
clusterDNS:
- 100.64.0.10
clusterDomain: cluster.local
containerLogMaxFiles: 5
containerLogMaxSize: 100Mi
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cpuCFSQuota: true
cpuManagerPolicy: none
cpuManagerReconcilePeriod: 10s
crashLoopBackOff: {}
enableControllerAttachDetach: true
enableDebuggingHandlers: true
enableServer: true
enforceNodeAllocatable:
- pods
eventBurst: 50
eventRecordQPS: 50
evictionHard:
  imagefs.available: 5%
  imagefs.inodesFree: 5%
  memory.available: 100Mi
  nodefs.available: 5%
  nodefs.inodesFree: 5%
evictionMaxPodGracePeriod: 90
evictionPressureTransitionPeriod: 4m0s
evictionSoft:
  imagefs.available: 10%
  imagefs.inodesFree: 10%
  memory.available: 200Mi
  nodefs.available: 10%
  nodefs.inodesFree: 10%
evictionSoftGracePeriod:
  imagefs.available: 1m30s
  imagefs.inodesFree: 1m30s
  memory.available: 1m30s
  nodefs.available: 1m30s
  nodefs.inodesFree: 1m30s
failSwapOn: true
featureGates:
  RotateKubeletServerCertificate: true
fileCheckFrequency: 20s
hairpinMode: promiscuous-bridge
httpCheckFrequency: 20s
imageGCHighThresholdPercent: 50
imageGCLowThresholdPercent: 40
imageMaximumGCAge: 0s
imageMinimumGCAge: 2m0s
kind: KubeletConfiguration
kubeAPIBurst: 50
kubeAPIQPS: 50
kubeReserved:
  cpu: 80m
  memory: 1Gi
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
maxOpenFiles: 1000000
maxParallelImagePulls: 5
maxPods: 110
memorySwap: {}
nodeStatusReportFrequency: 1m0s
nodeStatusUpdateFrequency: 10s
protectKernelDefaults: true
registerWithTaints:
- effect: NoSchedule
  key: node.gardener.cloud/critical-components-not-ready
registryBurst: 10
registryPullQPS: 5
resolvConf: /etc/resolv.conf
rotateCertificates: true
runtimeRequestTimeout: 2m0s
serializeImagePulls: false
serverTLSBootstrap: true
shutdownGracePeriod: 2m0s
shutdownGracePeriodCriticalPods: 20s
streamingConnectionIdleTimeout: 5m0s
syncFrequency: 1m0s
volumePluginDir: /var/lib/kubelet/volumeplugins
volumeStatsAggPeriod: 1m0s
"""


def kubelet_unit(version):
    flags = [
        "--bootstrap-kubeconfig=/var/lib/kubelet/kubeconfig-bootstrap",
        "--config=/var/lib/kubelet/config/kubelet",
        "--kubeconfig=/var/lib/kubelet/kubeconfig-real",
        f"--node-labels=worker.gardener.cloud/kubernetes-version={version}",
        f"--node-labels=worker.gardener.cloud/pool={POOL}",
        "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
        "--runtime-cgroups=/system.slice/containerd.service",
    ]
    exec_start = "ExecStart=/opt/bin/kubelet \\\n    " + " \\\n    ".join(flags) + " \\\n    --v=2 $KUBELET_EXTRA_ARGS"
    return "\n".join([
        "[Unit]", "Description=kubelet daemon", "Documentation=https://kubernetes.io/docs/admin/kubelet",
        "After=containerd.service", "[Install]", "WantedBy=multi-user.target", "[Service]",
        "Restart=always", "RestartSec=5",
        'Environment="HTTP2_READ_IDLE_TIMEOUT_SECONDS=25" "HTTP2_PING_TIMEOUT_SECONDS=12"',
        "EnvironmentFile=/etc/environment", "EnvironmentFile=-/var/lib/kubelet/extra_args", exec_start,
    ])


def b64(text):
    return base64.b64encode(text.encode()).decode()


def pem(label, count, lines=19):
    """`count` stand-in PEM certificates (deterministic pseudo-random DER)."""
    out = []
    for i in range(count):
        seed = hashlib.sha256(f"{label}-{i}".encode()).digest()
        der = b""
        while len(der) < lines * 48:
            seed = hashlib.sha256(seed).digest()
            der += seed
        text = base64.b64encode(der[: lines * 48]).decode()
        body = "\n".join(text[j:j + 64] for j in range(0, len(text), 64))
        out.append(f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n")
    return "".join(out)


def script(name, lines):
    """A stand-in shell script of about the real size."""
    return "#!/bin/bash\n" + "".join(f"# {name}: step {i} of the real script\n" for i in range(lines))


def gardenlet_components():
    """Units and files of gardenlet's other OSC components (stand-in contents)."""
    roots = pem("root", 4)
    units = [
        {"name": "updatecacerts.service", "command": "start",
         "content": "[Unit]\nDescription=Update local certificate authorities\n# Since other services depend on the certificate store run this early\nDefaultDependencies=no\nWants=systemd-tmpfiles-setup.service clean-ca-certificates.service\nAfter=systemd-tmpfiles-setup.service clean-ca-certificates.service\nBefore=sysinit.target\n[Service]\nType=oneshot\nExecStart=/var/lib/ssl/update-local-ca-certificates.sh\nRemainAfterExit=yes\n[Install]\nWantedBy=multi-user.target",
         "filePaths": ["/var/lib/ca-certificates-local/ROOTcerts.crt", "/etc/pki/trust/anchors/ROOTcerts.pem", "/var/lib/ssl/update-local-ca-certificates.sh"]},
        {"name": "systemd-journald.service", "command": "restart", "filePaths": ["/etc/systemd/journald.conf"]},
        {"name": "sshd-ensurer.service", "command": "start", "enable": True,
         "content": "[Unit]\nDescription=Ensure SSHD service is enabled or disabled\nDefaultDependencies=no\n[Service]\nType=simple\nRestart=always\nRestartSec=15\nExecStart=/var/lib/sshd-ensurer/run.sh\n[Install]\nWantedBy=multi-user.target",
         "filePaths": ["/var/lib/sshd-ensurer/run.sh"]},
        {"name": "valitail.service", "command": "start", "enable": True,
         "content": "[Unit]\nDescription=valitail daemon\nDocumentation=https://github.com/credativ/plutono\n[Install]\nWantedBy=multi-user.target\n[Service]\nCPUAccounting=yes\nMemoryAccounting=yes\nCPUQuota=3%\nCPUQuotaPeriodSec=1000ms\nMemoryMin=29M\nMemoryHigh=400M\nMemoryMax=800M\nMemorySwapMax=0\nRestart=always\nRestartSec=5\nEnvironmentFile=/etc/environment\nExecStartPre=/bin/sh -c \"systemctl set-environment HOSTNAME=$(hostname | tr [:upper:] [:lower:])\"\nExecStartPre=/bin/sh -c \"test -s /var/lib/valitail/auth-token\"\nExecStart=/opt/bin/valitail -config.file=/var/lib/valitail/config/config",
         "filePaths": ["/var/lib/valitail/config/config", "/var/lib/valitail/ca.crt", "/opt/bin/valitail"]},
        {"name": "gardener-user.service", "enable": True,
         "content": "[Unit]\nDescription=Configure gardener user\nAfter=sshd.service\n[Service]\nRestart=on-failure\nEnvironmentFile=/etc/environment\nExecStart=/var/lib/gardener-user/run.sh\n"},
        {"name": "gardener-user.path", "command": "start", "enable": True,
         "content": "[Path]\nPathChanged=/var/lib/gardener-user-ssh.key\n[Install]\nWantedBy=multi-user.target\n"},
    ]
    files = [
        {"path": "/var/lib/ca-certificates-local/ROOTcerts.crt", "permissions": 420, "content": {"inline": {"encoding": "b64", "data": b64(roots)}}},
        {"path": "/etc/pki/trust/anchors/ROOTcerts.pem", "permissions": 420, "content": {"inline": {"encoding": "b64", "data": b64(roots)}}},
        {"path": "/var/lib/ssl/update-local-ca-certificates.sh", "permissions": 484, "content": {"inline": {"encoding": "b64", "data": b64(script("update-local-ca-certificates", 40))}}},
        {"path": "/etc/systemd/journald.conf", "permissions": 420, "content": {"inline": {"encoding": "", "data": "[Journal]\nSystemMaxUse=400M\nSystemMaxFileSize=200M\nMaxRetentionSec=14day\n"}}},
        {"path": "/var/lib/sshd-ensurer/run.sh", "permissions": 493, "content": {"inline": {"encoding": "b64", "data": b64(script("enable-sshd", 30))}}},
        {"path": "/opt/bin/valitail", "permissions": 493, "content": {"imageRef": {"image": "europe-docker.pkg.dev/gardener-project/releases/gardener/valitail:v2.2.28", "filePathInImage": "/usr/bin/valitail"}}},
        {"path": "/var/lib/valitail/config/config", "permissions": 420, "content": {"inline": {"encoding": "b64", "data": b64("server:\n  disable: true\n" + "".join(f"# valitail scrape config line {i}\n" for i in range(70)))}}},
        {"path": "/var/lib/valitail/ca.crt", "permissions": 420, "content": {"inline": {"encoding": "b64", "data": b64(pem("valitail-ca", 1))}}},
        {"path": "/var/lib/gardener-user-authorized-keys", "permissions": 420, "content": {"inline": {"encoding": "b64", "data": b64("".join(f"ssh-ed25519 {base64.b64encode(hashlib.sha256(f'key-{i}'.encode()).digest()).decode()} gardener-{i}\n" for i in range(2)))}}},
        {"path": "/var/lib/gardener-user/run.sh", "permissions": 493, "content": {"inline": {"encoding": "b64", "data": b64(script("gardener-user", 45))}}},
    ]
    return units, files


def osc(provider, namespace, version, purpose):
    key = f"gardener-node-agent-{POOL}-77ac3"
    name = f"{key}-{'original' if purpose == 'reconcile' else 'init'}"
    sysctl = "".join(f"{k} = {SYSCTL[k]}\n" for k in sorted(SYSCTL))
    units = [
        {"name": "containerd.service", "dropIns": [{"name": "11-exec_config.conf", "content": "[Service]\nExecStart=\nExecStart=/usr/bin/containerd --config=/etc/containerd/config.toml\n"}], "filePaths": ["/etc/containerd/config.toml"]},
        {"name": "kubelet.service", "command": "start", "enable": True, "content": kubelet_unit(version),
         "filePaths": ["/var/lib/kubelet/ca.crt", "/var/lib/kubelet/config/kubelet", "/opt/bin/kubelet"]},
        {"name": "systemd-sysctl.service", "command": "restart", "enable": True, "filePaths": ["/etc/sysctl.d/99-k8s-general.conf"]},
        {"name": "gardener-node-agent.service", "enable": True, "content": "[Unit]\nDescription=Gardener Node Agent\nAfter=network-online.target\n\n[Service]\nLimitMEMLOCK=infinity\nExecStart=/opt/bin/gardener-node-agent --config-dir=/var/lib/gardener-node-agent/config\nRestart=always\nRestartSec=5\n\n[Install]\nWantedBy=multi-user.target\n"},
    ]
    files = [
        {"path": "/var/lib/kubelet/ca.crt", "permissions": 384, "content": {"inline": {"encoding": "b64", "data": b64("-----BEGIN CERTIFICATE-----\n" + "MIIC" + "A" * 900 + "\n-----END CERTIFICATE-----\n")}}},
        {"path": "/var/lib/kubelet/config/kubelet", "permissions": 384, "content": {"inline": {"encoding": "b64", "data": b64(KUBELET_CONFIG)}}},
        {"path": "/etc/sysctl.d/99-k8s-general.conf", "permissions": 420, "content": {"inline": {"encoding": "", "data": sysctl}}},
        {"path": "/opt/bin/kubelet", "permissions": 493, "content": {"imageRef": {"image": f"europe-docker.pkg.dev/gardener-project/releases/hyperkube:v{version}", "filePathInImage": "/kubelet"}}},
        {"path": "/etc/containerd/config.toml", "permissions": 420, "content": {"inline": {"encoding": "b64", "data": b64("version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n" + "# containerd settings\n" * 40)}}},
        {"path": "/var/lib/gardener-node-agent/config/config.yaml", "permissions": 384, "content": {"inline": {"encoding": "b64", "data": b64("apiVersion: nodeagent.config.gardener.cloud/v1alpha1\nkind: NodeAgentConfiguration\n" + "# node agent\n" * 60)}}},
    ]
    extra_units, extra_files = gardenlet_components()
    units += extra_units
    files += extra_files
    return {
        "apiVersion": "extensions.gardener.cloud/v1alpha1",
        "kind": "OperatingSystemConfig",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "provider.extensions.gardener.cloud/mutated-by-controlplane-webhook": "true",
                "worker.gardener.cloud/pool": POOL,
            },
            "annotations": {"gardener.cloud/operation": "reconcile", "gardener.cloud/timestamp": "2026-08-21T10:12:13.456789012Z"},
        },
        "spec": {
            "type": "gardenlinux",
            "purpose": purpose,
            "criConfig": {"name": "containerd", "cgroupDriver": "systemd"},
            "units": units if purpose == "reconcile" else units[:1],
            "files": files if purpose == "reconcile" else files[:1],
        },
    }


for provider, (namespace, version) in PROVIDERS.items():
    for purpose, suffix in (("reconcile", "original"), ("provision", "init")):
        with open(f"examples/osc/{provider}-{suffix}.json", "w") as out:
            json.dump(osc(provider, namespace, version, purpose), out, indent=2, sort_keys=True)
            out.write("\n")


def review():
    """gardenlet's UPDATE of the aws `-original` OSC, with the stored object."""
    with open("examples/osc/aws-original.json") as f:
        new = json.load(f)
    stored = json.loads(subprocess.run(
        ["cargo", "run", "-q", "--", "mutate", "--provider", "aws", "--objects-dir", "examples/objects",
         "-f", "examples/osc/aws-original.json", "--output", "json"],
        check=True, capture_output=True, text=True).stdout)
    meta = {"uid": "5b0f6e2a-8c3d-4f1e-a7b9-2d4c6e8f0a13", "resourceVersion": "48213377", "generation": 7,
            "creationTimestamp": "2026-08-01T08:00:00Z"}
    new["metadata"].update(meta)
    old = copy.deepcopy(stored)
    old["metadata"].update(meta)
    old["metadata"]["annotations"]["gardener.cloud/timestamp"] = "2026-08-21T09:12:13.123456789Z"
    group = {"group": "extensions.gardener.cloud", "version": "v1alpha1"}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f",
            "kind": {**group, "kind": "OperatingSystemConfig"},
            "resource": {**group, "resource": "operatingsystemconfigs"},
            "requestKind": {**group, "kind": "OperatingSystemConfig"},
            "requestResource": {**group, "resource": "operatingsystemconfigs"},
            "name": new["metadata"]["name"],
            "namespace": new["metadata"]["namespace"],
            "operation": "UPDATE",
            "userInfo": {"username": "system:serviceaccount:garden:gardenlet", "uid": "c3a1e7d2-4b6f-4e0a-9d8c-1a2b3c4d5e6f",
                         "groups": ["system:serviceaccounts", "system:serviceaccounts:garden", "system:authenticated"]},
            "object": new,
            "oldObject": old,
            "dryRun": False,
            "options": {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "gardenlet"},
        },
    }


with open("examples/reviews/aws-operatingsystemconfig.json", "w") as out:
    json.dump(review(), out, indent=2)
    out.write("\n")

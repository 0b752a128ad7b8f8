//! The Go struct `kubelet.config.k8s.io/v1beta1 KubeletConfiguration`
//! (k8s.io/kubelet v0.36.3) as data: every field with its JSON name, Go type,
//! pointer-ness, `omitempty` and the library minor that added it. The codec
//! that reads and writes the file with it is `mutation/osc/kubelet.rs`.

/// A Go type of the struct.
#[derive(Debug)]
pub enum Ty {
    Str,
    Bool,
    I32,
    I64,
    U32,
    F64,
    /// `metav1.Duration`: a Go duration string.
    Duration,
    /// component-base `TimeOrMetaDuration`: a duration string, or integer
    /// nanoseconds, written back the way it came.
    FlushFrequency,
    /// `resource.Quantity`: canonical string.
    Quantity,
    /// `metav1.Time`: RFC 3339 in UTC, seconds.
    Time,
    Map(&'static Ty),
    List(&'static Ty),
    Struct(&'static [Field]),
}

/// One field of a Go struct.
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
    /// A pointer: nil unless set, and written even when zero.
    pub ptr: bool,
    pub omitempty: bool,
    /// The k8s.io/kubelet minor (`0.<since>`) that added the field; 0 for
    /// fields older than every supported library.
    pub since: u32,
}

const fn f(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        ptr: false,
        omitempty: true,
        since: 0,
    }
}

const fn p(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        ptr: true,
        omitempty: true,
        since: 0,
    }
}

/// A field without `omitempty`.
const fn always(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        ptr: false,
        omitempty: false,
        since: 0,
    }
}

const fn since(mut field: Field, minor: u32) -> Field {
    field.since = minor;
    field
}

static STR: Ty = Ty::Str;
static QUANTITY: Ty = Ty::Quantity;

const X509: &[Field] = &[f("clientCAFile", Ty::Str)];
const AUTHN_WEBHOOK: &[Field] = &[p("enabled", Ty::Bool), f("cacheTTL", Ty::Duration)];
const ANONYMOUS: &[Field] = &[p("enabled", Ty::Bool)];
const AUTHENTICATION: &[Field] = &[
    always("x509", Ty::Struct(X509)),
    always("webhook", Ty::Struct(AUTHN_WEBHOOK)),
    always("anonymous", Ty::Struct(ANONYMOUS)),
];
const AUTHZ_WEBHOOK: &[Field] = &[
    f("cacheAuthorizedTTL", Ty::Duration),
    f("cacheUnauthorizedTTL", Ty::Duration),
];
const AUTHORIZATION: &[Field] = &[
    f("mode", Ty::Str),
    always("webhook", Ty::Struct(AUTHZ_WEBHOOK)),
];
const MEMORY_SWAP: &[Field] = &[f("swapBehavior", Ty::Str)];
const CRASH_LOOP_BACK_OFF: &[Field] = &[p("maxContainerRestartPeriod", Ty::Duration)];
const SHUTDOWN_BY_PRIORITY: &[Field] = &[
    always("priority", Ty::I32),
    always("shutdownGracePeriodSeconds", Ty::I64),
];
static SHUTDOWN_BY_PRIORITY_TY: Ty = Ty::Struct(SHUTDOWN_BY_PRIORITY);
const MEMORY_RESERVATION: &[Field] = &[
    always("numaNode", Ty::I32),
    always("limits", Ty::Map(&QUANTITY)),
];
static MEMORY_RESERVATION_TY: Ty = Ty::Struct(MEMORY_RESERVATION);
const TAINT: &[Field] = &[
    always("key", Ty::Str),
    f("value", Ty::Str),
    always("effect", Ty::Str),
    p("timeAdded", Ty::Time),
];
static TAINT_TY: Ty = Ty::Struct(TAINT);
const TRACING: &[Field] = &[p("endpoint", Ty::Str), p("samplingRatePerMillion", Ty::I32)];
const USER_NAMESPACES: &[Field] = &[p("idsPerPod", Ty::I64)];
const OUTPUT_ROUTING: &[Field] = &[
    f("splitStream", Ty::Bool),
    f("infoBufferSize", Ty::Quantity),
];
const FORMAT_OPTIONS: &[Field] = &[
    f("text", Ty::Struct(OUTPUT_ROUTING)),
    f("json", Ty::Struct(OUTPUT_ROUTING)),
];
const VMODULE_ITEM: &[Field] = &[always("filePattern", Ty::Str), always("verbosity", Ty::U32)];
static VMODULE_ITEM_TY: Ty = Ty::Struct(VMODULE_ITEM);
const LOGGING: &[Field] = &[
    f("format", Ty::Str),
    always("flushFrequency", Ty::FlushFrequency),
    always("verbosity", Ty::U32),
    f("vmodule", Ty::List(&VMODULE_ITEM_TY)),
    f("options", Ty::Struct(FORMAT_OPTIONS)),
];
static BOOL: Ty = Ty::Bool;
static STRING_LISTS: Ty = Ty::List(&STR);

/// `KubeletConfiguration` at k8s.io/kubelet v0.36.3, field by field.
///
/// A `static`, not a `const`: the decoder caches each struct's field order
/// by the address of its field list (`gocompat::kubelet::name_order`), and
/// only a static has one address. As a `const` every use may get its own
/// copy; after the codecs moved to `gocompat/` (issue 24) the decoder's use
/// and the cache's did, so every decode sorted the ~150 root fields again:
/// +55 k instructions per decode, +6 to +13 % of an OSC mutation.
pub static SCHEMA: &[Field] = &[
    p("enableServer", Ty::Bool),
    f("staticPodPath", Ty::Str),
    f("podLogsDir", Ty::Str),
    f("syncFrequency", Ty::Duration),
    f("fileCheckFrequency", Ty::Duration),
    f("httpCheckFrequency", Ty::Duration),
    f("staticPodURL", Ty::Str),
    f("staticPodURLHeader", Ty::Map(&STRING_LISTS)),
    f("address", Ty::Str),
    f("port", Ty::I32),
    f("readOnlyPort", Ty::I32),
    f("tlsCertFile", Ty::Str),
    f("tlsPrivateKeyFile", Ty::Str),
    f("tlsCipherSuites", Ty::List(&STR)),
    since(f("tlsCurvePreferences", Ty::List(&I32_TY)), 36),
    f("tlsMinVersion", Ty::Str),
    f("rotateCertificates", Ty::Bool),
    f("serverTLSBootstrap", Ty::Bool),
    always("authentication", Ty::Struct(AUTHENTICATION)),
    always("authorization", Ty::Struct(AUTHORIZATION)),
    p("registryPullQPS", Ty::I32),
    f("registryBurst", Ty::I32),
    f("imagePullCredentialsVerificationPolicy", Ty::Str),
    f("preloadedImagesVerificationAllowlist", Ty::List(&STR)),
    p("eventRecordQPS", Ty::I32),
    f("eventBurst", Ty::I32),
    p("enableDebuggingHandlers", Ty::Bool),
    f("enableContentionProfiling", Ty::Bool),
    p("healthzPort", Ty::I32),
    f("healthzBindAddress", Ty::Str),
    p("oomScoreAdj", Ty::I32),
    f("clusterDomain", Ty::Str),
    f("clusterDNS", Ty::List(&STR)),
    f("streamingConnectionIdleTimeout", Ty::Duration),
    f("nodeStatusUpdateFrequency", Ty::Duration),
    f("nodeStatusReportFrequency", Ty::Duration),
    f("nodeLeaseDurationSeconds", Ty::I32),
    f("imageMinimumGCAge", Ty::Duration),
    f("imageMaximumGCAge", Ty::Duration),
    p("imageGCHighThresholdPercent", Ty::I32),
    p("imageGCLowThresholdPercent", Ty::I32),
    f("volumeStatsAggPeriod", Ty::Duration),
    f("kubeletCgroups", Ty::Str),
    f("systemCgroups", Ty::Str),
    f("cgroupRoot", Ty::Str),
    p("cgroupsPerQOS", Ty::Bool),
    f("cgroupDriver", Ty::Str),
    f("cpuManagerPolicy", Ty::Str),
    p("singleProcessOOMKill", Ty::Bool),
    f("cpuManagerPolicyOptions", Ty::Map(&STR)),
    f("cpuManagerReconcilePeriod", Ty::Duration),
    f("memoryManagerPolicy", Ty::Str),
    f("topologyManagerPolicy", Ty::Str),
    f("topologyManagerScope", Ty::Str),
    f("topologyManagerPolicyOptions", Ty::Map(&STR)),
    f("qosReserved", Ty::Map(&STR)),
    f("runtimeRequestTimeout", Ty::Duration),
    f("hairpinMode", Ty::Str),
    f("maxPods", Ty::I32),
    f("podCIDR", Ty::Str),
    p("podPidsLimit", Ty::I64),
    p("resolvConf", Ty::Str),
    f("runOnce", Ty::Bool),
    p("cpuCFSQuota", Ty::Bool),
    p("cpuCFSQuotaPeriod", Ty::Duration),
    p("nodeStatusMaxImages", Ty::I32),
    f("maxOpenFiles", Ty::I64),
    f("contentType", Ty::Str),
    p("kubeAPIQPS", Ty::I32),
    f("kubeAPIBurst", Ty::I32),
    p("serializeImagePulls", Ty::Bool),
    p("maxParallelImagePulls", Ty::I32),
    f("evictionHard", Ty::Map(&STR)),
    f("evictionSoft", Ty::Map(&STR)),
    f("evictionSoftGracePeriod", Ty::Map(&STR)),
    f("evictionPressureTransitionPeriod", Ty::Duration),
    f("evictionMaxPodGracePeriod", Ty::I32),
    f("evictionMinimumReclaim", Ty::Map(&STR)),
    p("mergeDefaultEvictionSettings", Ty::Bool),
    f("podsPerCore", Ty::I32),
    p("enableControllerAttachDetach", Ty::Bool),
    f("protectKernelDefaults", Ty::Bool),
    p("makeIPTablesUtilChains", Ty::Bool),
    p("iptablesMasqueradeBit", Ty::I32),
    p("iptablesDropBit", Ty::I32),
    f("featureGates", Ty::Map(&BOOL)),
    p("failSwapOn", Ty::Bool),
    f("memorySwap", Ty::Struct(MEMORY_SWAP)),
    f("containerLogMaxSize", Ty::Str),
    p("containerLogMaxFiles", Ty::I32),
    p("containerLogMaxWorkers", Ty::I32),
    p("containerLogMonitorInterval", Ty::Duration),
    f("configMapAndSecretChangeDetectionStrategy", Ty::Str),
    f("systemReserved", Ty::Map(&STR)),
    f("kubeReserved", Ty::Map(&STR)),
    f("reservedSystemCPUs", Ty::Str),
    f("showHiddenMetricsForVersion", Ty::Str),
    f("systemReservedCgroup", Ty::Str),
    f("kubeReservedCgroup", Ty::Str),
    f("enforceNodeAllocatable", Ty::List(&STR)),
    f("allowedUnsafeSysctls", Ty::List(&STR)),
    f("volumePluginDir", Ty::Str),
    f("providerID", Ty::Str),
    f("kernelMemcgNotification", Ty::Bool),
    f("logging", Ty::Struct(LOGGING)),
    p("enableSystemLogHandler", Ty::Bool),
    p("enableSystemLogQuery", Ty::Bool),
    f("shutdownGracePeriod", Ty::Duration),
    f("shutdownGracePeriodCriticalPods", Ty::Duration),
    f(
        "shutdownGracePeriodByPodPriority",
        Ty::List(&SHUTDOWN_BY_PRIORITY_TY),
    ),
    f("crashLoopBackOff", Ty::Struct(CRASH_LOOP_BACK_OFF)),
    f("reservedMemory", Ty::List(&MEMORY_RESERVATION_TY)),
    p("enableProfilingHandler", Ty::Bool),
    p("enableDebugFlagsHandler", Ty::Bool),
    p("seccompDefault", Ty::Bool),
    p("memoryThrottlingFactor", Ty::F64),
    since(f("memoryReservationPolicy", Ty::Str), 36),
    f("registerWithTaints", Ty::List(&TAINT_TY)),
    p("registerNode", Ty::Bool),
    p("tracing", Ty::Struct(TRACING)),
    p("localStorageCapacityIsolation", Ty::Bool),
    always("containerRuntimeEndpoint", Ty::Str),
    f("imageServiceEndpoint", Ty::Str),
    p("failCgroupV1", Ty::Bool),
    p("userNamespaces", Ty::Struct(USER_NAMESPACES)),
];
static I32_TY: Ty = Ty::I32;

/// The newest k8s.io/kubelet minor [`SCHEMA`] describes.
pub const NEWEST_LIBRARY: u32 = 36;
/// The oldest minor it can stand for (the fields it marks `since` are the
/// only differences down to it).
pub const OLDEST_LIBRARY: u32 = 35;

/// Whether `path` names a settable field of the schema (for profile checks):
/// struct fields by name, then at most map keys.
pub fn field_exists(path: &[&str]) -> Result<(), String> {
    let mut fields = SCHEMA;
    for (i, key) in path.iter().enumerate() {
        let Some(field) = fields.iter().find(|f| f.name == *key) else {
            return Err(format!(
                "{key:?} is not a field of KubeletConfiguration{}",
                if i == 0 { "" } else { " at this place" }
            ));
        };
        match &field.ty {
            Ty::Struct(inner) => fields = inner,
            Ty::Map(_) => {
                return if path.len() <= i + 2 {
                    Ok(())
                } else {
                    Err(format!("{key} is a map: one key may follow it"))
                };
            }
            _ if i + 1 < path.len() => return Err(format!("{key} has no fields")),
            _ => {}
        }
    }
    Ok(())
}

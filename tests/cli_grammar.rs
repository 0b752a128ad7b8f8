//! One CLI grammar: every flag of every subcommand has its environment
//! variable, `--profile` goes wherever `--provider` goes, an unknown provider
//! gets the same answer and exit code from every subcommand, and every Go
//! flag name the docs say `serve` accepts parses.

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::CommandFactory as _;
use scion::cli::Cli;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Environment variables that keep Gardener's names instead of `SCION_<FLAG>`.
const GARDENER_ENV: &[&str] = &["LEADER_ELECTION_NAMESPACE"];

/// Every (subcommand path, argument) of the command tree.
fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Arg)>) {
    for arg in cmd.get_arguments() {
        out.push((path.to_owned(), arg.clone()));
    }
    for sub in cmd.get_subcommands() {
        walk(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

#[test]
fn every_flag_has_its_environment_variable() {
    let mut args = Vec::new();
    walk(&Cli::command(), "scion", &mut args);
    let mut missing = Vec::new();
    let mut checked = 0;
    for (path, arg) in &args {
        let Some(long) = arg.get_long() else {
            continue;
        };
        if matches!(long, "help" | "version") {
            continue;
        }
        checked += 1;
        let want = format!("SCION_{}", long.to_uppercase().replace('-', "_"));
        match arg.get_env().and_then(|e| e.to_str()) {
            Some(env) if env == want || GARDENER_ENV.contains(&env) => {}
            other => missing.push(format!("{path} --{long}: {other:?}, want {want}")),
        }
    }
    assert!(checked > 60, "walked only {checked} flags");
    assert!(
        missing.is_empty(),
        "flags without their variable:\n{}",
        missing.join("\n")
    );
}

#[test]
fn profile_goes_wherever_provider_goes() {
    let root = Cli::command();
    let mut with_provider = Vec::new();
    for sub in root.get_subcommands() {
        let longs: Vec<&str> = sub.get_arguments().filter_map(|a| a.get_long()).collect();
        if longs.contains(&"provider") {
            with_provider.push(sub.get_name().to_owned());
            for other in ["profile", "provider-dir"] {
                assert!(
                    longs.contains(&other),
                    "{} has --provider but no --{other}",
                    sub.get_name()
                );
            }
        }
    }
    assert_eq!(
        with_provider,
        [
            "serve",
            "manifests",
            "mutate",
            "render",
            "validate",
            "images",
            "check",
            "registration"
        ]
    );
}

/// `--feature-gates` is one flag: the commands that render a ControlPlane
/// (`serve`, `render`, `check`) take it with the same help, environment
/// variable and grammar.
#[test]
fn the_feature_gates_are_one_flag_of_the_commands_that_render() {
    let root = Cli::command();
    let mut with_gates = Vec::new();
    let mut seen: Option<(String, Option<String>)> = None;
    for sub in root.get_subcommands() {
        let Some(arg) = sub
            .get_arguments()
            .find(|a| a.get_long() == Some("feature-gates"))
        else {
            continue;
        };
        with_gates.push(sub.get_name().to_owned());
        let this = (
            arg.get_help().map(ToString::to_string).unwrap_or_default(),
            arg.get_env().map(|e| e.to_string_lossy().into_owned()),
        );
        assert_eq!(this.1.as_deref(), Some("SCION_FEATURE_GATES"));
        if let Some(first) = &seen {
            assert_eq!(first, &this, "{} words it differently", sub.get_name());
        }
        seen = Some(this);
    }
    assert_eq!(with_gates, ["serve", "render", "check"]);
    for command in ["serve", "render", "check"] {
        let argv = |gates: &str| {
            vec![
                "scion".to_owned(),
                command.into(),
                "--provider".into(),
                "azure".into(),
                "--controlplane".into(),
                "ns/cp".into(),
                "--objects-dir".into(),
                "objs".into(),
                format!("--feature-gates={gates}"),
            ]
            .into_iter()
            .filter(|a| command == "render" || !matches!(a.as_str(), "--controlplane" | "ns/cp"))
            .filter(|a| command != "check" || !matches!(a.as_str(), "--objects-dir" | "objs"))
            .collect::<Vec<_>>()
        };
        Cli::try_parse_from_args(&argv("DisableRemedyController=true,Other=False"))
            .unwrap_or_else(|e| panic!("{command}: {e}"));
        let err = Cli::try_parse_from_args(&argv("DisableRemedyController=on"))
            .expect_err("a bad value")
            .to_string();
        assert!(
            err.contains("the value of feature gate DisableRemedyController is true or false"),
            "{command}: {err}"
        );
    }
}

fn scion(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(args)
        .current_dir(root())
        .env_remove("IMAGEVECTOR_OVERWRITE")
        .env_remove("SCION_PROVIDER")
        .env_remove("SCION_PROFILE")
        .env_remove("SCION_PROVIDER_DIR")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unknown_provider_gets_the_same_answer_from_every_subcommand() {
    let want = scion::cli::provider::unknown_provider("vsphere");
    let commands: [&[&str]; 8] = [
        &["serve", "--provider", "vsphere"],
        &["validate", "--provider", "vsphere"],
        &[
            "mutate",
            "--provider",
            "vsphere",
            "-f",
            "examples/etcd/aws-etcd-main.json",
        ],
        &[
            "render",
            "--provider",
            "vsphere",
            "--objects-dir",
            "examples/objects",
            "--controlplane",
            "a/b",
        ],
        &["check", "--provider", "vsphere"],
        &["manifests", "--provider", "vsphere", "--namespace", "x"],
        &["registration", "--provider", "vsphere"],
        &["images", "--provider", "vsphere"],
    ];
    for args in commands {
        let (code, stdout, stderr) = scion(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?} printed {stdout}");
        assert!(stderr.contains(&want), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    }
}

#[test]
fn an_installation_takes_a_profile_of_a_built_in_provider_and_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    let aws = dir.path().join("aws.yaml");
    std::fs::write(&aws, "provider: aws\n").unwrap();
    let custom = dir.path().join("vsphere.yaml");
    std::fs::write(&custom, "provider: vsphere\n").unwrap();
    let by_name = scion(&["manifests", "--provider", "aws", "--namespace", "x"]);
    let by_profile = scion(&[
        "manifests",
        "--profile",
        aws.to_str().unwrap(),
        "--namespace",
        "x",
    ]);
    assert_eq!(by_name.0, Some(0), "{}", by_name.2);
    assert_eq!(by_profile, by_name);
    for args in [
        vec!["manifests", "--namespace", "x"],
        vec!["registration"],
        vec!["images"],
    ] {
        let mut args = args;
        args.extend(["--profile", custom.to_str().unwrap()]);
        let (code, stdout, stderr) = scion(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stdout.is_empty());
        assert!(
            stderr.contains("\"vsphere\" is not built into scion"),
            "{args:?}: {stderr}"
        );
    }
}

/// The flag names of the docs' table of the Go extensions' flags, each with
/// a value of the kind its column shows.
fn documented_go_flags(docs: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(docs).unwrap();
    let start = text
        .find("The Go extensions' flag names are accepted too")
        .expect("the Go flag section");
    // The first table after the sentence: its rows' first cells.
    let section = &text[start..];
    let table = &section[section.find("\n|").expect("a table")..];
    let table = &table[..table.find("\n\n").unwrap_or(table.len())];
    let mut flags = Vec::new();
    for line in table.lines().filter(|l| l.starts_with("| `--")) {
        let cell = line.split('|').nth(1).unwrap();
        let mut rest = cell;
        while let Some(at) = rest.find("`--") {
            let token = &rest[at + 1..];
            let end = token.find('`').unwrap();
            let code = &token[..end];
            rest = &token[end + 1..];
            let name = code.split([' ', '=', '[']).next().unwrap().to_owned();
            let value = match code.split_once(' ') {
                Some((_, placeholder)) => sample(placeholder),
                None if code.contains("[=BOOL]") => "true".to_owned(),
                None => String::new(),
            };
            flags.push((name, value));
        }
    }
    flags
}

fn sample(placeholder: &str) -> String {
    match placeholder.trim() {
        "PORT" => "443",
        "N" => "5",
        "QPS" => "100",
        "NS" => "garden",
        "NAME" => "provider-aws-leader-election",
        "DIR" => "/tmp/certs",
        "IP" => "0.0.0.0",
        "VERSION" => "1.120.0",
        "LIST" => "controlplane",
        "ADDR" => ":8080",
        "service" | "MODE" => "service",
        "HOST[:PORT]" => "127.0.0.1:9443",
        "LEVEL" => "info",
        "GATES" => "MTUCustomizer=true",
        "FORMAT" => "json",
        other => panic!("no sample value for {other}"),
    }
    .to_owned()
}

#[test]
fn every_go_flag_name_the_docs_name_is_accepted_by_serve() {
    let flags = documented_go_flags(&root().join("docs/operating.md"));
    let names: Vec<&str> = flags.iter().map(|(n, _)| n.as_str()).collect();
    for required in [
        "--webhook-config-service-port",
        "--webhook-config-cert-dir",
        "--gardener-version",
        "--healthcheck-max-concurrent-reconciles",
        "--metrics-bind-address",
        "--leader-election",
        "--feature-gates",
    ] {
        assert!(
            names.contains(&required),
            "the docs do not list {required}: {names:?}"
        );
    }
    for (name, value) in &flags {
        let mut argv = vec![
            "scion".to_owned(),
            "serve".into(),
            "--provider".into(),
            "aws".into(),
        ];
        argv.push(if value.is_empty() {
            name.clone()
        } else {
            format!("{name}={value}")
        });
        if let Err(err) = Cli::try_parse_from_args(&argv) {
            panic!("{argv:?} is refused: {err}");
        }
    }
}

trait TryParse {
    fn try_parse_from_args(argv: &[String]) -> Result<(), clap::Error>;
}

impl TryParse for Cli {
    fn try_parse_from_args(argv: &[String]) -> Result<(), clap::Error> {
        <Cli as clap::Parser>::try_parse_from(argv).map(|_| ())
    }
}

/// `--profile FILE` with a profile of a new cloud runs where `--provider`
/// would: `mutate` applies its rule, `--explain` names it.
#[test]
fn a_profile_file_runs_in_mutate_with_its_rules() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("acme.yaml");
    std::fs::write(
        &profile,
        "provider: acme\ncomponents:\n  kube-controller-manager:\n    - name: kcm-acme\n      \
         description: the acme cloud provider\n      actions:\n        \
         - ensureFlag: {flag: \"--cloud-provider=\", value: acme}\n",
    )
    .unwrap();
    let (code, stdout, stderr) = scion(&[
        "mutate",
        "--profile",
        profile.to_str().unwrap(),
        "--objects-dir",
        "examples/objects",
        "-f",
        "examples/reviews/aws-kube-controller-manager.json",
        "--output",
        "patch",
        "--explain",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("--cloud-provider=acme"), "{stdout}");
    assert!(
        stderr.contains("by rule kcm-acme: the acme cloud provider"),
        "{stderr}"
    );
    // With --provider too, they must agree.
    let (code, _, stderr) = scion(&[
        "mutate",
        "--provider",
        "aws",
        "--profile",
        profile.to_str().unwrap(),
        "-f",
        "examples/reviews/aws-kube-controller-manager.json",
    ]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("does not match the provider \"acme\""),
        "{stderr}"
    );
}

//! Child processes of the test bed that cannot outlive the test.
//!
//! Each child runs in a process group of its own (so a stop reaches anything
//! it forks) and gets `SIGKILL` from the kernel when the test process dies,
//! however it dies (`PR_SET_PDEATHSIG`): a panic unwinds into [`Proc`]'s
//! `Drop` (SIGTERM to the group, SIGKILL after a grace), an abort or a
//! `SIGKILL` of the test binary leaves the kernel's signal. The death signal
//! follows the *thread* that forked, so every child is forked by one thread
//! that lives as long as the process, not by a test's thread (which ends
//! with its test while a shared test bed lives on).

use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

type Job = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Fork `cmd` on the long-lived spawner thread.
fn spawn_on_spawner(cmd: Command) -> std::io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("testbed-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("start the test bed's spawner thread");
        Mutex::new(tx)
    });
    let (tx, rx) = mpsc::channel();
    sender
        .lock()
        .unwrap()
        .send((cmd, tx))
        .expect("the spawner thread is alive");
    rx.recv().expect("the spawner thread answers")
}

/// A running child with its output in a log file.
pub struct Proc {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Proc {
    /// Start `cmd` as `name`, stdout and stderr appended to `log`.
    pub fn spawn(name: &str, mut cmd: Command, log: &Path) -> Proc {
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .unwrap_or_else(|e| panic!("cannot open the log {} of {name}: {e}", log.display()));
        let err = out.try_clone().unwrap();
        let parent = rustix::process::getpid();
        cmd.stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        // SAFETY: only async-signal-safe system calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
                // The parent may have died before the signal was armed.
                if rustix::process::getppid() != Some(parent) {
                    return Err(std::io::Error::other("the test process is gone"));
                }
                Ok(())
            });
        }
        let child = spawn_on_spawner(cmd).unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            name: name.to_owned(),
            child,
            log: log.to_path_buf(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The exit status if the process has ended.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last `max` bytes of the log, for failure messages, without the
    /// flag dump Kubernetes components start with.
    pub fn log_tail(&self, max: u64) -> String {
        tail(&self.log, max * 8)
            .lines()
            .filter(|l| !l.contains("] FLAG: "))
            .collect::<Vec<_>>()
            .join("\n")
            .chars()
            .rev()
            .take(max as usize)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect()
    }

    /// Panic with the log tail if the process has ended.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.exited() {
            panic!(
                "{} exited ({status}); the end of its log {}:\n{}",
                self.name,
                self.log.display(),
                self.log_tail(6000)
            );
        }
    }

    /// Send `signal` to the process group.
    pub fn signal(&self, signal: Signal) {
        if let Some(pid) = Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process_group(pid, signal);
        }
    }

    /// `kill -9` of the group: no signal handler runs, nothing is drained or
    /// released. Returns the exit status.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        self.signal(Signal::KILL);
        self.child.wait().ok()
    }

    /// `(VmRSS, VmHWM)` in KiB from `/proc/<pid>/status`: resident memory
    /// now and its peak so far; `None` once the process has ended.
    pub fn memory_kib(&self) -> Option<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// SIGTERM to the group; SIGKILL after `grace`. Returns the exit status.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Some(status) = self.exited() {
            // the group may still hold children of it
            self.signal(Signal::KILL);
            return Some(status);
        }
        self.signal(Signal::TERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(status) = self.exited() {
                self.signal(Signal::KILL);
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.signal(Signal::KILL);
        self.child.wait().ok()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(10));
    }
}

/// The last `max` bytes of a file (lossy UTF-8).
pub fn tail(path: &Path, max: u64) -> String {
    let Ok(mut file) = File::open(path) else {
        return format!("(no log at {})", path.display());
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut buf = Vec::new();
    let _ = file.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// A port on 127.0.0.1 free right now. The test bed runs in a network
/// namespace of its own, so only the test's own processes compete for ports.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

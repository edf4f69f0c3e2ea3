//! The `edi-inbox` binary as a separate process, for what only processes show: two replicas on one
//! database, a relay killed mid-call, an export that crashes.
#![allow(dead_code)] // each test binary uses its own part of the harness

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// A running `edi-inbox` process; killed when dropped.
pub struct Process {
    child: Arc<Mutex<Child>>,
    /// The address it listens on, for `serve`.
    pub address: Option<SocketAddr>,
    log: Arc<Mutex<Vec<String>>>,
}

/// `edi-inbox` with `args`, JSON logs, on `database_url`.
pub fn command(database_url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_edi-inbox"));
    command
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("EDI_INBOX_LOG_FORMAT", "json")
        .env("RUST_LOG", "info,sqlx=warn")
        .stdin(Stdio::null());
    command
}

impl Process {
    /// Starts `command`; for `serve` (`listens`), waits until it listens and learns its address.
    pub fn start(mut command: Command, listens: bool) -> Process {
        let mut child =
            command.stderr(Stdio::piped()).stdout(Stdio::null()).spawn().expect("edi-inbox starts");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (found, address) = mpsc::channel();
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(json) = serde_json::from_str::<serde_json::Value>(&line)
                    && json["fields"]["message"] == "listening"
                    && let Some(address) = json["fields"]["address"].as_str().and_then(|a| a.parse().ok())
                {
                    let _ = found.send(address);
                }
                lines.lock().unwrap().push(line);
            }
        });
        let child = Arc::new(Mutex::new(child));
        let mut process = Process { child, address: None, log };
        if listens {
            match address.recv_timeout(Duration::from_secs(30)) {
                Ok(address) => process.address = Some(address),
                Err(_) => panic!("edi-inbox did not start listening:\n{}", process.log()),
            }
        }
        process
    }

    /// A handle that kills the process (SIGKILL) from anywhere, e.g. from inside a request handler.
    pub fn killer(&self) -> impl FnOnce() + Send + 'static {
        let child = Arc::clone(&self.child);
        move || {
            let _ = child.lock().unwrap().kill();
        }
    }

    /// The peak resident memory of the process so far (`VmHWM`), in bytes.
    pub fn peak_rss(&self) -> u64 {
        let pid = self.child.lock().unwrap().id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc");
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM");
        kib * 1024
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address.expect("a serving process"))
    }

    /// Waits up to `within` for the process to end.
    pub fn wait(&self, within: Duration) -> Option<ExitStatus> {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.lock().unwrap().try_wait() {
                return Some(status);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(mut child) = self.child.lock() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // Kept with the in-process servers' logs for scripts/check-logs.
        let dir = super::log_dir();
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join(format!("process-{}.log", uuid::Uuid::now_v7())), self.log());
    }
}

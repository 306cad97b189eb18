//! A throwaway PostgreSQL cluster for tests and benchmarks: `initdb` + `pg_ctl` in a temp dir
//! on a free 127.0.0.1 port, stopped on drop. Run as root, it runs the server as the
//! `postgres` user (PostgreSQL refuses root) and hands it the temp dir. The initialised data
//! dir is kept once per user as a template and copied, so a test costs a start, not an initdb.
//! A watcher process stops the server when the process that started it dies, even by SIGKILL.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{PgResult, PgStoreError};

/// The server binaries: `TT_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`, else `PATH`.
pub fn find_bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TT_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    // The effective uid, read from /proc so no libc call is needed.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("Uid:"))
                .and_then(|line| line.split_whitespace().nth(2).map(|uid| uid == "0"))
        })
        .unwrap_or(false)
}

fn config_error(message: impl Into<String>) -> PgStoreError {
    PgStoreError::Config(message.into())
}

/// Runs `program` (as `postgres` when we are root) and fails with its output on error.
fn run(bin: &Path, program: &str, args: &[&str], as_postgres: bool) -> PgResult<()> {
    let exe = bin.join(program);
    let mut command = if as_postgres {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(&exe);
        command
    } else {
        Command::new(&exe)
    };
    let output = command
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|err| config_error(format!("cannot run {}: {err}", exe.display())))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(config_error(format!(
            "{program} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )))
    }
}

fn chown_postgres(path: &Path) -> PgResult<()> {
    let status = Command::new("chown")
        .args(["-R", "postgres:postgres"])
        .arg(path)
        .status()
        .map_err(|err| config_error(format!("cannot run chown: {err}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(config_error(format!("chown {} failed", path.display())))
    }
}

fn free_port() -> PgResult<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|err| config_error(format!("no free port: {err}")))?;
    listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|err| config_error(format!("no free port: {err}")))
}

/// The initialised, never-started data dir every cluster copies.
fn template(bin: &Path, as_postgres: bool) -> PgResult<PathBuf> {
    let base = std::env::temp_dir();
    let tag = bin
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("pg");
    let path = base.join(format!(
        "tt-pg-template-{tag}-{}",
        if as_postgres { "root" } else { "user" }
    ));
    if path.join("PG_VERSION").exists() {
        return Ok(path);
    }
    let staging = tempfile::Builder::new()
        .prefix("tt-pg-initdb-")
        .tempdir_in(&base)
        .map_err(|err| config_error(format!("cannot create a temp dir: {err}")))?;
    let data = staging.path().join("data");
    if as_postgres {
        chown_postgres(staging.path())?;
    }
    let data_arg = data.to_string_lossy().into_owned();
    run(
        bin,
        "initdb",
        &[
            "-D",
            &data_arg,
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        ],
        as_postgres,
    )?;
    // Another process may have won the race; either way a complete template is in place.
    if std::fs::rename(&data, &path).is_err() && !path.join("PG_VERSION").exists() {
        return Err(config_error("cannot place the initdb template"));
    }
    Ok(path)
}

/// A running throwaway cluster; dropping it stops the server and deletes its files.
pub struct TestCluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    as_postgres: bool,
    /// The server options it was started with (port, fsync…), to start it again alike.
    options: String,
}

impl TestCluster {
    /// Starts a cluster. `fsync` off makes test servers fast; durability tests turn it on.
    pub fn start(fsync: bool) -> PgResult<Self> {
        let bin = find_bin_dir().ok_or_else(|| {
            config_error(
                "PostgreSQL server binaries not found (install postgresql or set TT_PG_BIN)",
            )
        })?;
        let as_postgres = is_root();
        let template = template(&bin, as_postgres)?;
        let dir = tempfile::Builder::new()
            .prefix("tt-pg-")
            .tempdir()
            .map_err(|err| config_error(format!("cannot create a temp dir: {err}")))?;
        let data = dir.path().join("data");
        let status = Command::new("cp")
            .arg("-a")
            .arg(&template)
            .arg(&data)
            .status()
            .map_err(|err| config_error(format!("cannot run cp: {err}")))?;
        if !status.success() {
            return Err(config_error("cannot copy the initdb template"));
        }
        if as_postgres {
            chown_postgres(dir.path())?;
        }
        let data_arg = data.to_string_lossy().into_owned();
        let log = dir.path().join("server.log").to_string_lossy().into_owned();
        let mut last_error = None;
        for _ in 0..5 {
            let port = free_port()?;
            let options = format!(
                "-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' \
                 -c fsync={} -c synchronous_commit={} -c max_connections=100 \
                 -c shared_buffers=16MB",
                if fsync { "on" } else { "off" },
                if fsync { "on" } else { "off" },
            );
            match run(
                &bin,
                "pg_ctl",
                &[
                    "-D", &data_arg, "-l", &log, "-o", &options, "-w", "-t", "60", "start",
                ],
                as_postgres,
            ) {
                Ok(()) => {
                    let cluster = Self {
                        bin,
                        dir,
                        port,
                        as_postgres,
                        options,
                    };
                    cluster.watch_parent();
                    return Ok(cluster);
                }
                Err(err) => last_error = Some(err),
            }
        }
        Err(last_error.unwrap_or_else(|| config_error("the cluster did not start")))
    }

    /// The port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A URL for `database` (created by [`TestCluster::create_database`], or `postgres`).
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Creates an empty database and returns its URL.
    pub async fn create_database(&self, name: &str) -> PgResult<String> {
        let client = crate::pool::connect(&self.url("postgres")).await?;
        client
            .batch_execute(&format!("CREATE DATABASE \"{}\"", name.replace('"', "")))
            .await
            .map_err(|err| PgStoreError::pg(format!("creating database {name}"), err))?;
        Ok(self.url(name))
    }

    /// Ends `run_id`'s lease in the database at `url` now, as its holder missing heartbeats
    /// for a whole lease would (the holder itself does not know), so tests of takeovers need
    /// not wait real time.
    pub async fn expire_lease(url: &str, run_id: &str) -> PgResult<()> {
        let client = crate::pool::connect(url).await?;
        client
            .execute(
                "UPDATE run_leases SET expires_at = clock_timestamp() - interval '1 second'
                 WHERE run_id = $1",
                &[&run_id],
            )
            .await
            .map_err(|err| PgStoreError::pg(format!("expiring the lease of {run_id}"), err))?;
        Ok(())
    }

    /// Runs `sql` (one or more statements) on the database at `url`: tests damage stored runs
    /// by hand with it, as a person with `psql` could.
    pub async fn run_sql(url: &str, sql: &str) -> PgResult<()> {
        let client = crate::pool::connect(url).await?;
        client
            .batch_execute(sql)
            .await
            .map_err(|err| PgStoreError::pg("running a test statement".to_owned(), err))
    }

    /// The server's data dir (for logs in failure messages).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Stops the server as a crash would (`pg_ctl stop -m immediate`: every session is cut
    /// off, nothing is checkpointed); [`TestCluster::start_again`] brings it back.
    pub fn stop_immediately(&self) -> PgResult<()> {
        let data_arg = self.data_dir().to_string_lossy().into_owned();
        run(
            &self.bin,
            "pg_ctl",
            &["-D", &data_arg, "-m", "immediate", "-w", "stop"],
            self.as_postgres,
        )
    }

    /// Starts the server again on the same port and data dir, with the same options; it
    /// replays its WAL first, as after a crash.
    pub fn start_again(&self) -> PgResult<()> {
        let data_arg = self.data_dir().to_string_lossy().into_owned();
        let log = self
            .dir
            .path()
            .join("server.log")
            .to_string_lossy()
            .into_owned();
        run(
            &self.bin,
            "pg_ctl",
            &[
                "-D",
                &data_arg,
                "-l",
                &log,
                "-o",
                &self.options,
                "-w",
                "-t",
                "60",
                "start",
            ],
            self.as_postgres,
        )
    }

    fn pg_ctl_stop(&self) {
        let data_arg = self.data_dir().to_string_lossy().into_owned();
        let _ = run(
            &self.bin,
            "pg_ctl",
            &["-D", &data_arg, "-m", "immediate", "-w", "stop"],
            self.as_postgres,
        );
    }

    /// Starts a shell that stops the server once this process is gone (a SIGKILLed test
    /// leaves no server behind).
    fn watch_parent(&self) {
        let pg_ctl = self.bin.join("pg_ctl");
        let data = self.data_dir();
        let prefix = if self.as_postgres {
            "runuser -u postgres -- "
        } else {
            ""
        };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
             [ -f '{data}/postmaster.pid' ] && {prefix}'{pg_ctl}' -D '{data}' -m immediate stop \
             >/dev/null 2>&1; rm -rf '{dir}'",
            pid = std::process::id(),
            data = data.display(),
            pg_ctl = pg_ctl.display(),
            dir = self.dir.path().display(),
        );
        let _ = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        self.pg_ctl_stop();
    }
}

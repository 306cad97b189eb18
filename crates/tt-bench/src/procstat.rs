//! Process CPU time and peak resident memory on Linux: `utime + stime` from `/proc/self/stat`
//! (in clock ticks), the process's CPU clock (`CLOCK_PROCESS_CPUTIME_ID`, to the nanosecond)
//! and `VmHWM` from `/proc/self/status`.

use anyhow::{Context, Result, anyhow};

/// Clock ticks per second for `/proc/self/stat`: `getconf CLK_TCK`, else the usual 100.
pub(crate) fn clock_ticks_per_second() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .filter(|ticks| *ticks > 0)
        .unwrap_or(100)
}

/// User plus system CPU seconds of this process (all threads) so far, from its CPU clock: the
/// scheduler's own count, not the ticks `/proc/self/stat` samples (Linux splits user from
/// system by sampling, but the total is exact).
pub(crate) fn process_cpu_seconds() -> f64 {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    time.tv_sec as f64 + time.tv_nsec as f64 / 1e9
}

/// User plus system CPU seconds and user CPU seconds alone of this process (all threads) so far.
pub(crate) fn cpu_user_seconds(ticks_per_second: u64) -> Result<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat")?;
    let per_second = ticks_per_second.max(1) as f64;
    Ok((
        cpu_ticks(&stat)? as f64 / per_second,
        user_ticks(&stat)? as f64 / per_second,
    ))
}

/// `utime + stime` (fields 14 and 15) of a `/proc/<pid>/stat` line. The command name (field 2)
/// may hold spaces and parentheses, so fields are counted after its last `)`.
pub(crate) fn cpu_ticks(stat: &str) -> Result<u64> {
    Ok(stat_field(stat, 11, "utime")? + stat_field(stat, 12, "stime")?)
}

/// `utime` (field 14) of a `/proc/<pid>/stat` line.
pub(crate) fn user_ticks(stat: &str) -> Result<u64> {
    stat_field(stat, 11, "utime")
}

/// The `index`-th field after the command name's last `)` (field 3, state, is the 0th).
fn stat_field(stat: &str, index: usize, name: &str) -> Result<u64> {
    let close = stat
        .rfind(')')
        .ok_or_else(|| anyhow!("/proc/self/stat has no `)` after the command name"))?;
    let rest = stat.get(close + 1..).unwrap_or_default();
    // After `)`: field 3 (state) is the first, so utime (14) and stime (15) are the 12th and 13th.
    rest.split_whitespace()
        .nth(index)
        .ok_or_else(|| anyhow!("/proc/self/stat has no {name} field"))?
        .parse::<u64>()
        .with_context(|| format!("/proc/self/stat {name} is not a number"))
}

/// Peak resident set size of this process in MiB (`VmHWM`).
pub(crate) fn peak_rss_mib() -> Result<f64> {
    let status =
        std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    Ok(vm_hwm_kib(&status)? as f64 / 1024.0)
}

/// Resident file-backed pages of this process in MiB (`RssFile`): pages of the executable and
/// the libraries it touched. They count in `VmHWM` but are shared, read-only and evictable,
/// and move by a MiB or more between builds of the same code (docs/benchmarks.md), so a peak
/// is read with them taken apart.
pub(crate) fn rss_file_mib() -> Result<f64> {
    let status =
        std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    Ok(status_kib(&status, "RssFile")? as f64 / 1024.0)
}

/// The `VmHWM:   12345 kB` value of a `/proc/<pid>/status` text, in KiB.
pub(crate) fn vm_hwm_kib(status: &str) -> Result<u64> {
    status_kib(status, "VmHWM")
}

/// The `<field>:   12345 kB` value of a `/proc/<pid>/status` text, in KiB.
fn status_kib(status: &str, field: &str) -> Result<u64> {
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .ok_or_else(|| anyhow!("/proc/self/status has no {field} line"))?;
    let mut parts = line.split_whitespace();
    let value = parts
        .next()
        .ok_or_else(|| anyhow!("{field} has no value"))?
        .parse::<u64>()
        .with_context(|| format!("{field} is not a number"))?;
    match parts.next() {
        Some("kB") => Ok(value),
        other => Err(anyhow!("{field} has unexpected unit {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_skip_a_command_name_with_spaces_and_parens() {
        let stat =
            "4242 (tt bench (x)) R 1 4242 4242 0 -1 4194304 100 0 0 0 250 17 0 0 20 0 3 0 1 0\n";
        assert_eq!(cpu_ticks(stat).unwrap(), 267);
        assert!(cpu_ticks("no parens here").is_err());
        assert!(cpu_ticks("1 (x) R 1 2").is_err());
        assert!(cpu_ticks("1 (x) R 1 2 3 4 5 6 7 8 9 10 ten 12").is_err());
    }

    #[test]
    fn vm_hwm_is_read_in_kib() {
        let status = "Name:\ttt-bench\nVmPeak:\t  99999 kB\nVmHWM:\t   20480 kB\nVmRSS:\t 100 kB\n";
        assert_eq!(vm_hwm_kib(status).unwrap(), 20480);
        assert!(vm_hwm_kib("VmRSS: 1 kB\n").is_err());
        assert!(vm_hwm_kib("VmHWM: 1 MB\n").is_err());
    }

    #[test]
    fn this_process_has_readable_figures() {
        let ticks = clock_ticks_per_second();
        assert!(ticks > 0);
        assert!(cpu_user_seconds(ticks).unwrap().0 >= 0.0);
        assert!(process_cpu_seconds() > 0.0);
        assert!(peak_rss_mib().unwrap() > 0.0);
        assert!(rss_file_mib().unwrap() > 0.0);
    }
}

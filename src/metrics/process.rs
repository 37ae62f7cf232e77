//! What the process used: peak resident set size and CPU time, from `/proc`.

/// Peak resident set size of this process (`VmHWM`) since it started or since the last
/// [`reset_peak_rss`], in bytes; 0 where /proc is unavailable.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map_or(0, |kb| kb * 1024)
}

/// CPU time (user + system) of this process so far, in seconds.
pub fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after the state field.
    (ticks(11) + ticks(12)) / 100.0
}

/// Resets the peak resident set size (`VmHWM`) to the current RSS, so that the next
/// [`peak_rss_bytes`] is the peak since now (Linux: writing `5` to `/proc/self/clear_refs`).
/// Returns whether the reset took effect. Memory the allocator kept from earlier work still counts,
/// as it is still resident.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_resets_to_what_is_resident_now() {
        const BIG: usize = 256 << 20;
        // Touch every page of a large block (the system allocator maps it apart and unmaps it on
        // drop), then free it: the peak stays above the block's size.
        let block = vec![1u8; BIG];
        assert_eq!(block.iter().step_by(4096).map(|b| *b as usize).sum::<usize>(), BIG / 4096);
        drop(block);
        let before = peak_rss_bytes();
        assert!(before >= BIG as u64, "peak {before} after touching {BIG} bytes");
        assert!(reset_peak_rss(), "/proc/self/clear_refs is writable on Linux");
        let after = peak_rss_bytes();
        assert!(after + (BIG as u64) / 2 <= before, "peak {after} after the reset, {before} before");
    }
}

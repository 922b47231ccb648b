//! Reading libFuzzer's output: the executions and corpus of a run, and a failing run's input and panic.

/// The panic (or libFuzzer's own error) without the backtrace's frames, at most 20 lines.
pub fn failure_excerpt(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines
        .iter()
        .position(|line| line.contains(" panicked at ") || line.contains("ERROR: libFuzzer"))
        .unwrap_or(lines.len().saturating_sub(20));
    let is_frame = |line: &&&str| {
        let line = line.trim_start();
        line.starts_with("at ") || line.split_once(": ").is_some_and(|(n, _)| n.parse::<u32>().is_ok())
    };
    lines[start..].iter().filter(|line| !is_frame(line)).take(20).copied().collect::<Vec<_>>().join("\n")
}

/// The path libFuzzer names after "Test unit written to ".
pub fn failing_input(log: &str) -> Option<String> {
    log.lines().find_map(|line| line.split_once("Test unit written to ").map(|(_, path)| path.trim().to_owned()))
}

/// What libFuzzer reports at the end (`-print_final_stats=1`) and in its last status line.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub executions: u64,
    pub new_inputs: u64,
    pub corpus: Option<u64>,
}

impl Stats {
    pub fn read(log: &str) -> Stats {
        let stat = |name: &str| {
            log.lines().find_map(|line| line.strip_prefix(name)?.trim().strip_prefix(':')?.trim().parse::<u64>().ok())
        };
        // `#12345  DONE   cov: 812 ft: 2301 corp: 96/3104b ...`: the corpus size when the run ended.
        let corpus = log.lines().rev().find_map(|line| {
            let after = line.split_once(" corp: ")?.1;
            after.split('/').next()?.trim().parse().ok()
        });
        Stats {
            executions: stat("stat::number_of_executed_units").unwrap_or(0),
            new_inputs: stat("stat::new_units_added").unwrap_or(0),
            corpus,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
INFO: Seed: 1234
#2\tINITED cov: 812 ft: 2301 corp: 14/3104b exec/s: 0 rss: 40Mb
#91234\tNEW    cov: 830 ft: 2400 corp: 15/3200b lim: 4096 exec/s: 9123 rss: 60Mb L: 96/1024 MS: 2 ChangeBit-
#182468\tDONE   cov: 840 ft: 2450 corp: 21/3500b lim: 4096 exec/s: 9123 rss: 61Mb
Done 182468 runs in 20 second(s)
stat::number_of_executed_units: 182468
stat::average_exec_per_sec:     9123
stat::new_units_added:          7
stat::slowest_unit_time_sec:    0
stat::peak_rss_mb:              61
";

    #[test]
    fn final_stats_give_executions_new_inputs_and_corpus() {
        let stats = Stats::read(LOG);
        assert_eq!(stats, Stats { executions: 182468, new_inputs: 7, corpus: Some(21) });
    }

    #[test]
    fn a_crash_log_names_the_failing_input() {
        let log = "thread '<unnamed>' panicked at router-user/src/x.rs:1:1\n==1== ERROR: libFuzzer: deadly signal\n\
                   artifact_prefix='/r/fuzz/artifacts/x/'; Test unit written to /r/fuzz/artifacts/x/crash-0a1b\n";
        assert_eq!(failing_input(log).as_deref(), Some("/r/fuzz/artifacts/x/crash-0a1b"));
        assert_eq!(failing_input(LOG), None);
        let excerpt = failure_excerpt(
            "INFO: Seed: 1\nthread '<unnamed>' panicked at src/a.rs:3:9:\nattempt to subtract with overflow\n\
             stack backtrace:\n   0: __rustc::rust_begin_unwind\n             at /rustc/x/panicking.rs:689:5\n\
             ==7== ERROR: libFuzzer: deadly signal\n",
        );
        assert_eq!(
            excerpt,
            "thread '<unnamed>' panicked at src/a.rs:3:9:\nattempt to subtract with overflow\nstack backtrace:\n\
             ==7== ERROR: libFuzzer: deadly signal"
        );
    }
}

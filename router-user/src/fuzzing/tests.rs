//! Every fuzz target's seed corpus (`fuzz/corpus/<target>/`), run through its entry point: the seeds are
//! realistic inputs and past findings, so each is a regression test in the ordinary test run.

use std::fs;
use std::path::PathBuf;

use super::TARGETS;

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target)
}

#[test]
fn every_seed_of_every_target_passes_its_entry_point() {
    for (target, entry) in TARGETS {
        let dir = corpus_dir(target);
        let seeds = fs::read_dir(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
        let mut count = 0;
        for seed in seeds {
            let path = seed.expect("a directory entry").path();
            let data = fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            entry(&data);
            count += 1;
        }
        assert!(count > 0, "{} holds no seed", dir.display());
    }
}

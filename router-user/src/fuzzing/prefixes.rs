//! The split-indifference check of the head readers (a pod's response head, a client's request head): the
//! answer for a read that brought only the first bytes must agree with the answer for the whole input.

use std::fmt::Debug;

/// Inputs up to this length have every prefix read; longer ones this many evenly spaced prefixes.
const ALL_PREFIXES_UP_TO: usize = 512;

/// Every prefix of `wire` gives `need_more` or the whole input's answer (`answer(wire)`); once a prefix gives
/// it, and from the head's end on (`head_end` of the whole answer, when it took a head), every longer prefix
/// does.
pub(super) fn check_prefixes<A: PartialEq + Debug>(
    wire: &[u8],
    answer: impl Fn(&[u8]) -> A,
    need_more: &A,
    head_end: impl Fn(&A) -> Option<usize>,
) {
    let full = answer(wire);
    let complete_from = head_end(&full);
    let step = wire.len().div_ceil(ALL_PREFIXES_UP_TO).max(1);
    let mut decided = false;
    for n in (0..wire.len()).step_by(step) {
        let got = answer(&wire[..n]);
        let head_complete = complete_from.is_some_and(|end| n >= end);
        if got == *need_more && !decided && !head_complete {
            continue;
        }
        assert_eq!(got, full, "the first {n} of {} bytes", wire.len());
        decided = true;
    }
}

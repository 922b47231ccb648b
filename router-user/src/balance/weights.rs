//! The OpenShift router's weight arithmetic: a route's service weights (clamped to 0..=256, absent = 1) are
//! spread over each service's endpoints, and the largest per-endpoint weight is scaled to 256 (minimum 1 for
//! a service with weight). With one service every endpoint simply gets weight 1.

/// Per-endpoint weight for each service, in the order given; `services` holds (weight, endpoint count).
pub fn endpoint_weights(services: &[(i32, usize)]) -> Vec<u32> {
    let clamped: Vec<(i32, usize)> = services.iter().map(|&(w, n)| (w.clamp(0, 256), n)).collect();
    if clamped.len() == 1 {
        return vec![u32::from(clamped[0].0 > 0)];
    }
    let per_endpoint: Vec<f32> =
        clamped.iter().map(|&(weight, count)| if count > 0 { weight as f32 / count as f32 } else { 0.0 }).collect();
    let max = per_endpoint.iter().copied().fold(0.0f32, f32::max);
    if max <= 0.0 {
        return vec![0; clamped.len()];
    }
    let scale = 256.0 / max;
    per_endpoint
        .iter()
        .map(|&w| {
            let scaled = (w * scale) as u32;
            if w > 0.0 && scaled < 1 {
                1
            } else {
                scaled
            }
        })
        .collect()
}

/// A service's weight as the router reads it: absent means 1, clamped to 0..=256.
pub fn service_weight(weight: Option<i32>) -> i32 {
    weight.unwrap_or(1).clamp(0, 256)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_openshift() {
        type Case<'a> = (&'a [(i32, usize)], &'a [u32]);
        let cases: &[Case<'_>] = &[
            (&[(100, 3)], &[1]),
            (&[(0, 3)], &[0]),
            // A=20 with 2 endpoints, B=10 with 4 endpoints -> 256 and 64 per endpoint.
            (&[(20, 2), (10, 4)], &[256, 64]),
            (&[(1, 1), (1, 1)], &[256, 256]),
            (&[(100, 1), (0, 2)], &[256, 0]),
            (&[(0, 1), (0, 1)], &[0, 0]),
            (&[(256, 1), (1, 1000)], &[256, 1]),
            (&[(500, 1), (-3, 1)], &[256, 0]),
            (&[(50, 0), (50, 2)], &[0, 256]),
        ];
        for (services, want) in cases {
            assert_eq!(endpoint_weights(services), *want, "{services:?}");
        }
        assert_eq!(service_weight(None), 1);
        assert_eq!(service_weight(Some(300)), 256);
    }
}

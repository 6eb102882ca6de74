//! What the load generators share: the percentile of sorted samples.

/// The `p`-th (0 to 1) of `sorted`, nearest rank; 0 for none.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

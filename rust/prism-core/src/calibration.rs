//! The token calibration's per-model fit (see `prism.attention.calibration`):
//! recursive least squares over three ratios (prose, code, tool), a Kalman
//! filter whose ratios drift a little each turn. Constant memory (three
//! ratios and the upper triangle of a 3x3 covariance) and about sixty float
//! operations per turn; the Python class keeps the state's JSON shape.

/// Ratios are kept within these bounds.
pub const MIN_RATIO: f64 = 0.25;
pub const MAX_RATIO: f64 = 4.0;
/// Prior variance of a ratio over one turn's noise variance (0.5 / 0.05, squared).
pub const PRIOR_VARIANCE: f64 = 100.0;
/// The ratios' drift per turn (variance, in units of one turn's noise): in
/// steady state a turn moves the fit about a quarter of the way to what it
/// saw, so a growing session is tracked closely.
pub const DRIFT: f64 = 0.1;
const DRIFT_CAP: f64 = PRIOR_VARIANCE - DRIFT;

/// One model's fit: ratios `r` and the covariance's upper triangle
/// `p = (p00, p01, p02, p11, p12, p22)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    pub r: [f64; 3],
    pub p: [f64; 6],
    pub turns: u64,
}

impl Default for Fit {
    fn default() -> Self {
        let v = PRIOR_VARIANCE;
        Fit {
            r: [1.0; 3],
            p: [v, 0.0, 0.0, v, 0.0, v],
            turns: 0,
        }
    }
}

/// A ratio clamped to `[MIN_RATIO, MAX_RATIO]`.
pub fn clamp_ratio(ratio: f64) -> f64 {
    // A NaN stays NaN, as it did in Python.
    ratio.clamp(MIN_RATIO, MAX_RATIO)
}

impl Fit {
    /// Learn from one request split `[prose, code, tool]` plus `fixed`
    /// (unscaled) tokens that the provider billed as `reported`. Returns
    /// false (and changes nothing) when there is nothing to learn from.
    pub fn observe(&mut self, split: [i64; 3], fixed: i64, reported: i64) -> bool {
        let scaled = split[0] + split[1] + split[2];
        if scaled <= 0 || reported <= fixed {
            return false;
        }
        // Fractions of the scaled part and the ratio it should have had:
        // well conditioned whatever the request size.
        let inv = 1.0 / scaled as f64;
        let u = [
            split[0] as f64 * inv,
            split[1] as f64 * inv,
            split[2] as f64 * inv,
        ];
        let target = (reported - fixed) as f64 * inv;
        let [p00, p01, p02, p11, p12, p22] = self.p;
        let pu = [
            p00 * u[0] + p01 * u[1] + p02 * u[2],
            p01 * u[0] + p11 * u[1] + p12 * u[2],
            p02 * u[0] + p12 * u[1] + p22 * u[2],
        ];
        let gain = 1.0 / (1.0 + u[0] * pu[0] + u[1] * pu[1] + u[2] * pu[2]);
        let [r0, r1, r2] = self.r;
        let step = (target - (r0 * u[0] + r1 * u[1] + r2 * u[2])) * gain;
        self.r = [
            clamp_ratio(r0 + pu[0] * step),
            clamp_ratio(r1 + pu[1] * step),
            clamp_ratio(r2 + pu[2] * step),
        ];
        // Kalman update, then the ratios' random walk; directions the mix
        // never moves along stop growing at the prior.
        let mut p = [
            p00 - pu[0] * pu[0] * gain,
            p01 - pu[0] * pu[1] * gain,
            p02 - pu[0] * pu[2] * gain,
            p11 - pu[1] * pu[1] * gain,
            p12 - pu[1] * pu[2] * gain,
            p22 - pu[2] * pu[2] * gain,
        ];
        for i in [0, 3, 5] {
            if p[i] < DRIFT_CAP {
                p[i] += DRIFT;
            }
        }
        self.p = p;
        self.turns += 1;
        true
    }

    /// The calibrated estimate: ratios times their kinds, rounded half to
    /// even (as Python's `round`), plus the fixed part.
    pub fn estimate(&self, split: [i64; 3], fixed: i64) -> i64 {
        let [r0, r1, r2] = self.r;
        let scaled = r0 * split[0] as f64 + r1 * split[1] as f64 + r2 * split[2] as f64;
        scaled.round_ties_even() as i64 + fixed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prior_estimates_the_plain_total() {
        let fit = Fit::default();
        assert_eq!(fit.estimate([100, 50, 25], 8), 183);
    }

    #[test]
    fn learns_a_constant_ratio() {
        let mut fit = Fit::default();
        for _ in 0..40 {
            assert!(fit.observe([300, 500, 200], 10, 1210));
        }
        assert!((fit.estimate([300, 500, 200], 10) - 1210).abs() <= 1);
        assert_eq!(fit.turns, 40);
    }

    #[test]
    fn nothing_to_learn_changes_nothing() {
        let mut fit = Fit::default();
        assert!(!fit.observe([0, 0, 0], 4, 100));
        assert!(!fit.observe([10, 0, 0], 50, 40));
        assert_eq!(fit, Fit::default());
    }

    #[test]
    fn ratios_stay_clamped() {
        let mut fit = Fit::default();
        for _ in 0..20 {
            fit.observe([100, 0, 0], 0, 100_000);
        }
        assert_eq!(fit.r[0], MAX_RATIO);
        assert_eq!(clamp_ratio(0.0), MIN_RATIO);
    }

    #[test]
    fn rounds_half_to_even() {
        let fit = Fit {
            r: [0.5, 1.0, 1.0],
            ..Fit::default()
        };
        assert_eq!(fit.estimate([5, 0, 0], 0), 2);
        assert_eq!(fit.estimate([7, 0, 0], 0), 4);
    }
}

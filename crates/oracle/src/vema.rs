//! The volume-weighted exponential moving average (V-EMA) of MultiMob §III-B, taken from
//! Android's WiFi watchdog:
//!
//! ```text
//! val(i+1)  = prod(i+1) / vol(i+1)                              (1)
//! prod(i+1) = a * (val_new * vol_new) + (1 - a) * prod(i)       (2)
//! vol(i+1)  = a * vol_new + (1 - a) * vol(i)                    (3)
//! ```
//!
//! "prod0 = vol0 = val0 = 0 and no value is computed if vol_new is 0", with a = 0.5. Here
//! `val_new` is a rate (lost packets over packets sent in the period) and `vol_new` the
//! period's volume (packets sent), so `val` is a rate weighted by how much each period sent.

/// One V-EMA.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vema {
    alpha: f64,
    prod: f64,
    vol: f64,
    val: f64,
}

impl Vema {
    /// `alpha` in [0, 1] (clamped); MultiMob and Android use 0.5.
    pub fn new(alpha: f64) -> Self {
        Self { alpha: alpha.clamp(0.0, 1.0), prod: 0.0, vol: 0.0, val: 0.0 }
    }

    /// Feeds one period: `value` (a rate) measured over `volume` samples. A period with no
    /// volume changes nothing. Returns the smoothed value.
    pub fn update(&mut self, value: f64, volume: f64) -> f64 {
        if volume > 0.0 && value.is_finite() && volume.is_finite() {
            self.prod = self.alpha * (value * volume) + (1.0 - self.alpha) * self.prod;
            self.vol = self.alpha * volume + (1.0 - self.alpha) * self.vol;
            if self.vol > 0.0 {
                self.val = self.prod / self.vol;
            }
        }
        self.val
    }

    /// The smoothed value (0 before any volume).
    pub fn value(&self) -> f64 {
        self.val
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn weights_periods_by_their_volume() {
        let mut v = Vema::new(0.5);
        assert_eq!(v.update(0.5, 10.0), 0.5);
        // prod = 0.5*(0*30) + 0.5*2.5 = 1.25; vol = 0.5*30 + 0.5*5 = 17.5.
        assert!((v.update(0.0, 30.0) - 1.25 / 17.5).abs() < 1e-12);
        // An empty period changes nothing.
        assert!((v.update(1.0, 0.0) - 1.25 / 17.5).abs() < 1e-12);
    }

    /// The closed form: after periods (r_k, n_k), k = 1..m, with weights w_k = a(1-a)^(m-k),
    /// val = sum(w_k r_k n_k) / sum(w_k n_k), over the periods with n_k > 0.
    fn reference(alpha: f64, periods: &[(f64, f64)]) -> f64 {
        let kept: Vec<&(f64, f64)> = periods.iter().filter(|p| p.1 > 0.0).collect();
        let m = kept.len();
        let (mut num, mut den) = (0.0, 0.0);
        for (k, (r, n)) in kept.iter().enumerate() {
            let w = alpha * (1.0 - alpha).powi((m - 1 - k) as i32);
            num += w * r * n;
            den += w * n;
        }
        if den > 0.0 {
            num / den
        } else {
            0.0
        }
    }

    proptest! {
        #[test]
        fn agrees_with_the_closed_form(
            alpha in 0.05f64..1.0,
            periods in prop::collection::vec((0.0f64..=1.0, prop_oneof![Just(0.0), 1.0f64..1e4]), 0..40),
        ) {
            let mut v = Vema::new(alpha);
            for &(r, n) in &periods {
                v.update(r, n);
            }
            let want = reference(alpha, &periods);
            prop_assert!((v.value() - want).abs() <= 1e-9 * want.max(1.0), "{} vs {}", v.value(), want);
            prop_assert!((0.0..=1.0 + 1e-12).contains(&v.value()));
        }
    }
}

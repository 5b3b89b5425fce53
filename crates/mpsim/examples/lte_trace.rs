//! The LTE drive's traces ([`mpsim::trace::lte_drive`]): their rates, and with a directory
//! argument, the traces themselves in mahimahi's format (`lte-drive.up`, `lte-drive.down`), for
//! mahimahi's `mm-link` or another emulator.
//!
//! Run: `cargo run --release -p mpsim --example lte_trace -- [DIR]`.

use mpsim::trace::lte_drive;

fn main() {
    let dir = std::env::args().nth(1);
    for (name, t) in ["lte-drive.up", "lte-drive.down"].into_iter().zip(lte_drive()) {
        let mut per_second: Vec<f64> = (0..120)
            .map(|s| {
                let (a, b) = (t.first_from(s * 1_000_000), t.first_from((s + 1) * 1_000_000));
                (b - a) as f64 * 1_500.0 * 8.0 / 1e6
            })
            .collect();
        let mean = per_second.iter().sum::<f64>() / per_second.len() as f64;
        let sd = (per_second.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / per_second.len() as f64).sqrt();
        per_second.sort_by(f64::total_cmp);
        println!(
            "{name}: {:.2} Mbit/s on average; per second: coefficient of variation {:.2}, min {:.2}, max {:.2} Mbit/s",
            t.mean_bps() as f64 / 1e6,
            sd / mean,
            per_second[0],
            per_second[per_second.len() - 1]
        );
        if let Some(d) = &dir {
            let path = std::path::Path::new(d).join(name);
            if let Err(e) = std::fs::write(&path, t.format()) {
                eprintln!("lte_trace: cannot write {}: {e}", path.display());
                std::process::exit(1);
            }
        }
    }
}

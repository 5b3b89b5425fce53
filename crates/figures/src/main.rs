//! Regenerates the papers' figures in the simulator: an SVG per figure and the index
//! `README.md` (tables beside the papers' numbers) in the output directory.
//!
//! `cargo run --release -p figures -- [--out DIR] [--seeds N]` (default `figures/`, 20 seeds).

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = std::path::PathBuf::from("figures");
    let mut seeds = 20u64;
    let mut k = 0;
    while k < args.len() {
        match (args[k].as_str(), args.get(k + 1)) {
            ("--out", Some(d)) => out = d.into(),
            ("--seeds", Some(n)) => match n.parse() {
                Ok(n) if n > 0 => seeds = n,
                _ => fail(&format!("--seeds {n}: a positive number of seeds")),
            },
            (a, _) => fail(&format!("unknown argument {a:?}; usage: figures [--out DIR] [--seeds N]")),
        }
        k += 2;
    }
    if let Err(e) = std::fs::create_dir_all(&out) {
        fail(&format!("{}: {e}", out.display()));
    }
    let t = Instant::now();
    let (fig4a, fig4b) = figures::multimob::fig4(seeds);
    let figs = [
        figures::multimob::fig3(seeds),
        fig4a,
        fig4b,
        figures::multimob::fig5(seeds),
        figures::multimob::fig7(seeds),
        figures::siri::fig6(seeds, false),
        figures::siri::fig6(seeds, true),
    ];
    let mut index = format!(
        "# The papers' figures, regenerated\n\nMade by `cargo run --release -p figures -- --out figures/` \
         ({seeds} seeds per point, in the deterministic simulator; {:.0} s on a 2-core machine). Each plot \
         shows medians with bars from the 25th to the 75th percentile.\n\n",
        t.elapsed().as_secs_f64().max(1.0)
    );
    for f in &figs {
        let svg = figures::plot::svg(f).unwrap_or_else(|e| fail(&e));
        let path = out.join(format!("{}.svg", f.id));
        std::fs::write(&path, svg).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
        index.push_str(&f.markdown());
        println!("{} ({})", path.display(), f.title);
    }
    let path = out.join("README.md");
    std::fs::write(&path, index).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
    println!("{} in {:.1} s", path.display(), t.elapsed().as_secs_f64());
}

fn fail(msg: &str) -> ! {
    eprintln!("figures: {msg}");
    std::process::exit(2);
}

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
    // Published with the phone's LTE radio on every cellular path (issue 32); the same figures
    // without it say, on each page, what the radio changed.
    let plain = all(seeds, None);
    let mut figs = all(seeds, Some(mpsim::RadioProfile::LTE));
    for f in &mut figs {
        if let Some(p) = plain.iter().find(|p| p.id == f.id) {
            f.radio = Some(figures::radio_change(p, f));
        }
    }
    let mut index = format!(
        "# The papers' figures, regenerated\n\nMade by `cargo run --release -p figures -- --out figures/` \
         ({seeds} seeds per point, in the deterministic simulator; {:.0} s on a 2-core machine). Each plot \
         shows medians with bars from the 25th to the 75th percentile. Every cellular path has the phone's \
         LTE radio (Huang et al., MobiSys 2012: a promotion of 0.26 s before the first packet of an idle \
         radio, paging on a 1.28 s cycle for data to it, an 11.6 s tail; `oracle::radio`); each page \
         says what the radio changed against the same figure without it.\n\n",
        t.elapsed().as_secs_f64().max(1.0)
    );
    for f in &figs {
        let svg = figures::plot::svg(f).unwrap_or_else(|e| fail(&e));
        let path = out.join(format!("{}.svg", f.id));
        std::fs::write(&path, svg).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
        index.push_str(&f.markdown());
        println!("{} ({})", path.display(), f.title);
    }
    index.push_str(NOT_REGENERATED);
    let path = out.join("README.md");
    std::fs::write(&path, index).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
    println!("{} in {:.1} s", path.display(), t.elapsed().as_secs_f64());
}

/// The papers' figures this page leaves out, and why.
const NOT_REGENERATED: &str = "## Not regenerated, and why\n\n\
- **MultiMob Fig. 9** (the share of packets over cellular during the walk, over time): its mean is Table I's \
  power; the time series is not drawn.\n\
- **MultiMob Fig. 11** (a player's buffer in the worst streaming run): no configuration stalls here (Fig. 10's \
  table), so the buffer never empties.\n\
- **MultiMob Fig. 12** and the Siri study's **Fig. 5 and Table I**: measurements of real users' phones and of \
  the radio's signal strength, which the simulator has no model of.\n\
- **Cellular uplink Figs. 1-3, Tables 1 and 2** (single-path throughput and RTT over time, and their variation): \
  they characterise the carriers' uplink rate control and queue management; the simulator's drop-tail queue at \
  a fixed rate models neither. Table 1's rates and RTTs are the inputs of Table 3 and Fig. 5 here.\n";

/// Every figure, in the index's order. The jobs are independent simulations: they run on every
/// core, each worker taking the next job.
fn all(seeds: u64, radio: Option<mpsim::RadioProfile>) -> Vec<figures::Figure> {
    use figures::{download, multimob, siri, uplink, walk};
    type Job = Box<dyn Fn(u64) -> Vec<figures::Figure> + Sync>;
    // The longest first, so that the two cores finish together; `order` puts them back.
    let jobs: Vec<(usize, Job)> = vec![
        (2, Box::new(|s| vec![multimob::fig5(s)])),
        (12, Box::new(|s| vec![uplink::mobile(s, true)])),
        (11, Box::new(|s| vec![uplink::mobile(s, false)])),
        (10, Box::new(|s| vec![uplink::table3(s)])),
        (7, Box::new(|s| vec![siri::fig4(s, false), siri::fig4(s, true)])),
        (3, Box::new(|s| vec![download::fig6(s)])),
        (6, Box::new(|s| vec![walk::streaming(s)])),
        (
            1,
            Box::new(|s| {
                let (a, b) = multimob::fig4(s);
                vec![a, b]
            }),
        ),
        (0, Box::new(|s| vec![multimob::fig3(s)])),
        (4, Box::new(|s| vec![multimob::fig7(s)])),
        (5, Box::new(|s| vec![walk::table1(s)])),
        (8, Box::new(|s| vec![siri::fig6(s, false)])),
        (9, Box::new(|s| vec![siri::fig6(s, true)])),
    ];
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((order, job)) = jobs.get(k) else { break };
                let t = Instant::now();
                let figs = figures::with_radio(radio, || job(seeds));
                let ids: Vec<&str> = figs.iter().map(|f| f.id).collect();
                eprintln!("{} in {:.1} s", ids.join(", "), t.elapsed().as_secs_f64());
                done.lock().unwrap_or_else(|e| e.into_inner()).push((*order, figs));
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|d| d.0);
    done.into_iter().flat_map(|d| d.1).collect()
}

fn fail(msg: &str) -> ! {
    eprintln!("figures: {msg}");
    std::process::exit(2);
}

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
    let figs = all(seeds);
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

/// Every figure, in the index's order. The jobs are independent simulations: they run on every
/// core, each worker taking the next job.
fn all(seeds: u64) -> Vec<figures::Figure> {
    use figures::{download, multimob, siri, uplink, walk};
    type Job = Box<dyn Fn(u64) -> Vec<figures::Figure> + Sync>;
    let jobs: Vec<Job> = vec![
        Box::new(|s| vec![multimob::fig3(s)]),
        Box::new(|s| {
            let (a, b) = multimob::fig4(s);
            vec![a, b]
        }),
        Box::new(|s| vec![multimob::fig5(s)]),
        Box::new(|s| vec![download::fig6(s)]),
        Box::new(|s| vec![multimob::fig7(s)]),
        Box::new(|s| vec![walk::table1(s)]),
        Box::new(|s| vec![walk::streaming(s)]),
        Box::new(|s| vec![siri::fig6(s, false)]),
        Box::new(|s| vec![siri::fig6(s, true)]),
        Box::new(|s| vec![uplink::table3(s)]),
        Box::new(|s| vec![uplink::mobile(s, false)]),
        Box::new(|s| vec![uplink::mobile(s, true)]),
    ];
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(job) = jobs.get(k) else { break };
                let figs = job(seeds);
                done.lock().unwrap_or_else(|e| e.into_inner()).push((k, figs));
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

//! The cellular-uplink study (seed 002, Chen et al.): uploads from a phone over cellular paths
//! whose rate, delay and presence change. What the simulator can express is what the study's
//! multipath section measured: the gain of several uplinks over the best one (its Table 3), an
//! upload through intermittent WiFi (Fig. 4) and a service downgrade from 4G to 3G (Fig. 5).
//! Its Figs. 1-3 and Table 2 (single-path throughput and RTT over time, their coefficient of
//! variation) characterise the carriers' uplink rate control and queue management; the
//! simulator's drop-tail queue at a fixed rate models neither, so those are not regenerated.
//!
//! Paths from the study's Table 1 (uplink, static; mobile for Fig. 5): Verizon 4G LTE 4.24
//! Mbit/s, 92 ms; AT&T 3.5G HSPA+ 0.89 Mbit/s, 288 ms; Verizon 3G eHRPD 0.56 Mbit/s, 860 ms.
//! The carriers' deep uplink queues (RTTs that grow until a loss) are drop-tail queues of
//! 100 ms of traffic on 4G and 200 ms on 3.5G, and the only losses are theirs: the study's loss
//! rates (0.1-0.6%) count every retransmission, overflows included, and as random losses they
//! would cap a Reno-like flow at 92 ms near 2.6 Mbit/s (Mathis et al.), which the study's 4.24
//! Mbit/s contradicts. The client opens a
//! subflow on every path (`fullmesh`); the schedulers compared are the sender's (the phone's).

use crate::download::delivered_bytes;
use crate::{Figure, Series, Spread};
use mpcore::{Config, CongestionControl, Iface, PathManager, Time};
use mpsim::apps::Bulk;
use mpsim::{client_addr, ms, Flow, PathConfig, PathEvent, Sim};

/// A path of `kbps` kbit/s, `rtt_ms` round trip, a drop-tail queue of `queue_ms` of traffic
/// and random loss `loss`.
fn path(i: usize, iface: Iface, kbps: u64, rtt_ms: u64, queue_ms: u64, loss: f64) -> PathConfig {
    let mut p = PathConfig::new(client_addr(i), iface, rtt_ms, 1);
    p.rate_bps = kbps * 1_000;
    p.queue_bytes = (kbps * 1_000 / 8 * queue_ms / 1_000).max(3_000);
    p.loss = loss;
    p
}

fn verizon_4g(i: usize) -> PathConfig {
    path(i, Iface::Cellular, 4_240, 92, 100, 0.0)
}

fn att_35g(i: usize) -> PathConfig {
    path(i, Iface::Cellular, 890, 288, 200, 0.0)
}

fn wifi(i: usize) -> PathConfig {
    path(i, Iface::Wifi, 8_000, 30, 30, 0.0)
}

/// Uploads for `duration` over `paths` after `script` (run on the fresh simulator), with the
/// client's `scheduler`; `iface` are the client's interface events, (time, path, up), as its
/// driver reports them (`Endpoint::set_path_up`). Returns the goodput the server read in each
/// second and the rate each path delivered on the wire in each second, Mbit/s.
fn upload(
    seed: u64,
    paths: Vec<PathConfig>,
    scheduler: &str,
    duration: Time,
    script: impl FnOnce(&mut Sim),
    iface: &[(Time, u8, bool)],
    congestion: CongestionControl,
) -> Option<(Vec<f64>, Vec<Vec<f64>>)> {
    let client = Config::default().with(|c| {
        c.multipath.path_manager = PathManager::Fullmesh;
        c.multipath.scheduler = scheduler.into();
        c.transport.keep_alive = 0;
        c.transport.congestion = congestion;
    });
    let server = Config::default().with(|c| c.transport.keep_alive = 0);
    let capacity: u64 = paths.iter().map(|p| p.rate_bps).sum();
    let npaths = paths.len();
    let mut sim = Sim::new(seed, client, server, crate::radio_paths(paths)).ok()?;
    script(&mut sim);
    let size = (capacity / 8 * (duration / 1_000_000 + 2)) as usize;
    // The bytes do not matter here (the figures measure rates), and a run sends up to 200 MB.
    let mut app = Bulk::new(vec![0x5a; size], false);
    let mut next = 0;
    sim.run(duration, |s| {
        while let Some(&(t, path, up)) = iface.get(next).filter(|e| e.0 <= s.now) {
            s.client.set_path_up(t, mpcore::PathId(path), up);
            next += 1;
        }
        match (app.drive(s), iface.get(next)) {
            (Flow::Wake(w), Some(e)) => Flow::Wake(Some(w.unwrap_or(Time::MAX).min(e.0))),
            (flow, _) => flow,
        }
    });
    let secs = (duration / 1_000_000) as usize;
    let mut goodput = vec![0.0; secs];
    let mut last = 0usize;
    let mut k = 0;
    for (s, g) in goodput.iter_mut().enumerate() {
        let end = (s as Time + 1) * 1_000_000;
        let mut bytes = last;
        while k < app.progress.len() && app.progress[k].0 < end {
            bytes = app.progress[k].1;
            k += 1;
        }
        *g = (bytes - last) as f64 * 8.0 / 1e6;
        last = bytes;
    }
    let per_path = (0..npaths)
        .map(|p| {
            delivered_bytes(&sim, p, mpsim::Dir::Up, 1_000_000, secs).iter().map(|&b| b as f64 * 8.0 / 1e6).collect()
        })
        .collect();
    Some((goodput, per_path))
}

/// The mean of `v[from..to]`.
fn mean(v: &[f64], from: usize, to: usize) -> f64 {
    let s = &v[from.min(v.len())..to.min(v.len())];
    s.iter().sum::<f64>() / s.len().max(1) as f64
}

/// Schedulers the multipath rows use.
pub const SCHEDULERS: [&str; 3] = ["lowest-rtt", "ecf", "blest"];

/// Table 3: a 30 s upload over Verizon 4G alone, AT&T 3.5G alone, and both (with each
/// scheduler): goodput from 5 s on (the study drops the first five seconds, slow start).
pub fn table3(seeds: u64) -> Figure {
    let duration = ms(30_000);
    let mut rows: Vec<(String, Vec<PathConfig>, &str)> = vec![
        ("Verizon 4G alone".into(), vec![verizon_4g(0)], "lowest-rtt"),
        ("AT&T 3.5G alone".into(), vec![att_35g(0)], "lowest-rtt"),
    ];
    for s in SCHEDULERS {
        rows.push((format!("both, {s}"), vec![verizon_4g(0), att_35g(1)], s));
    }
    let points: Vec<(f64, Spread)> = rows
        .iter()
        .enumerate()
        .map(|(x, (_, paths, sched))| {
            let v: Vec<f64> = (1..=seeds)
                .map(|seed| {
                    upload(seed, paths.clone(), sched, duration, |_| {}, &[], CongestionControl::Lia)
                        .map_or(f64::NAN, |(g, _)| mean(&g, 5, 30))
                })
                .collect();
            (x as f64, Spread::of(&v))
        })
        .collect();
    let best = points[0].1.median.max(points[1].1.median);
    let gains: Vec<String> = SCHEDULERS
        .iter()
        .enumerate()
        .map(|(k, s)| format!("{s} {:.2} Mbit/s ({:.2}×)", points[2 + k].1.median, points[2 + k].1.median / best))
        .collect();
    let top = points[2..].iter().map(|p| p.1.median).fold(0.0, f64::max) / best;
    let ours = format!(
        "Alone, Verizon 4G carries {:.2} Mbit/s and AT&T 3.5G {:.2} Mbit/s (their rates: 4.24 and 0.89). Both: {}. \
         The best multipath row is {:.2}× the best single path; the paper's was 1.25× (5.29 against 4.24 Mbit/s, \
         with four subflows over two interfaces). {} {}",
        points[0].1.median,
        points[1].1.median,
        gains.join(", "),
        top,
        if top >= 1.1 {
            "Multipath gains on the uplink as in the paper; the gain is bounded by the slow path's 0.89 Mbit/s \
             (at most 1.21× here)."
        } else {
            "The multipath gain is NOT the paper's: the slow path's RTT and losses cost more than it carries."
        },
        if points[2..].windows(2).all(|w| (w[0].1.median - w[1].1.median).abs() < 0.05) {
            "The three schedulers are alike: ECF sends on the slow path because the queue of an upload is long, \
             BLEST because the receiver's window (the default, far above both paths' flight) never blocks the fast \
             path; they differ where the window or the queue is short."
        } else {
            "The schedulers differ: see the plot."
        },
    );
    Figure {
        id: "uplink-table3",
        title: "Cellular uplink Table 3: multipath upload against the best single path".into(),
        x_label: "configuration".into(),
        y_label: "goodput from 5 s on, Mbit/s".into(),
        x_names: Some(rows.iter().map(|r| r.0.clone()).collect()),
        series: vec![Series { name: "goodput".into(), points }],
        reference: Some((best, "best single path".into())),
        table: None,
        setup: "A 30 s upload from the phone over the study's static uplinks: Verizon 4G LTE (4.24 Mbit/s, 92 ms, \
                a 100 ms queue) and AT&T 3.5G HSPA+ (0.89 Mbit/s, 288 ms, a 200 ms queue), losses only where the \
                queues overflow, alone and together with each sender scheduler; goodput as the server reads it, \
                from 5 s on."
            .into(),
        paper: "Four subflows over Verizon and AT&T give 5.29 Mbit/s, 25% above the best single-path TCP (Verizon, \
                4.24 Mbit/s); on the downlink the gain is 7.5%."
            .into(),
        ours,
        radio: None,
    }
}

const LIA: CongestionControl = CongestionControl::Lia;
/// The congestion controls Fig. 5 also runs after the downgrade.
const OTHER_CC: [(&str, CongestionControl); 3] = [
    ("OLIA", CongestionControl::Olia),
    ("uncoupled Reno", CongestionControl::Reno),
    ("uncoupled CUBIC", CongestionControl::Cubic),
];

/// Fig. 4 (intermittent WiFi) or Fig. 5 (service downgrade): a time sequence of seed 1 and a
/// table of the goodput in each phase over seeds.
pub fn mobile(seeds: u64, downgrade: bool) -> Figure {
    let duration = ms(120_000);
    // Fig. 4: WiFi present 0-30 s, lost 30-65 s, back 65-100 s, lost after (the study: back at
    // 85 s, lost at 130 s, scaled). Fig. 5: Verizon stalls 5 s at 60 s, then is 3G.
    let (paths, phases): (Vec<PathConfig>, Vec<(&str, usize, usize)>) = if downgrade {
        (
            vec![path(0, Iface::Cellular, 4_340, 112, 100, 0.0), path(1, Iface::Cellular, 910, 276, 200, 0.0)],
            vec![("4G", 5, 60), ("stall", 60, 65), ("3G", 70, 120)],
        )
    } else {
        (
            vec![wifi(0), verizon_4g(1), att_35g(2)],
            vec![("WiFi", 5, 30), ("no WiFi", 30, 65), ("WiFi back", 65, 100), ("no WiFi again", 100, 120)],
        )
    };
    let script = |sim: &mut Sim| {
        if downgrade {
            sim.at(ms(60_000), 0, PathEvent::Down);
            sim.at(ms(65_000), 0, PathEvent::Up);
            sim.at(ms(65_000), 0, PathEvent::RateBps(560_000));
            sim.at(ms(65_000), 0, PathEvent::Delay(ms(860) / 2));
        } else {
            sim.at(ms(30_000), 0, PathEvent::Down);
            sim.at(ms(65_000), 0, PathEvent::Up);
            sim.at(ms(100_000), 0, PathEvent::Down);
        }
    };
    // Leaving a hotspot's coverage, the phone loses the association and its driver reports the
    // interface down (a second after the last packet got through); it reports it up once
    // associated again.
    let iface: &[(Time, u8, bool)] =
        if downgrade { &[] } else { &[(ms(31_000), 0, false), (ms(65_000), 0, true), (ms(101_000), 0, false)] };
    let runs: Vec<(Vec<f64>, Vec<Vec<f64>>)> = (1..=seeds)
        .filter_map(|seed| upload(seed, paths.clone(), "lowest-rtt", duration, script, iface, LIA))
        .collect();
    let phase_spread =
        |from: usize, to: usize| Spread::of(&runs.iter().map(|r| mean(&r.0, from, to)).collect::<Vec<_>>());
    // The longest run of seconds with no goodput after the start, per seed.
    let stalls = Spread::of(
        &runs
            .iter()
            .map(|r| {
                let (mut run, mut worst) = (0, 0);
                for g in &r.0[2..] {
                    run = if *g == 0.0 { run + 1 } else { 0 };
                    worst = worst.max(run);
                }
                worst as f64
            })
            .collect::<Vec<_>>(),
    );
    let mut table = "| phase | goodput, Mbit/s |\n|---|---|\n".to_string();
    let cell = |s: &Spread| format!("{:.2} ({:.2}-{:.2}; {:.2}-{:.2})", s.median, s.p25, s.p75, s.min, s.max);
    let mut medians = Vec::new();
    for (name, from, to) in &phases {
        let s = phase_spread(*from, *to);
        medians.push(s.median);
        table.push_str(&format!("| {name} ({from}-{to} s) | {} |\n", cell(&s)));
    }
    table.push_str(&format!("| longest run of seconds without goodput | {} |\n", cell(&stalls)));
    // After the downgrade, the same run with each congestion control: coupling holds the
    // connection to about the best single path.
    let mut by_cc = Vec::new();
    if downgrade {
        for (name, cc) in OTHER_CC {
            let s = Spread::of(
                &(1..=seeds)
                    .filter_map(|seed| upload(seed, paths.clone(), "lowest-rtt", duration, script, iface, cc))
                    .map(|r| mean(&r.0, 70, 120))
                    .collect::<Vec<_>>(),
            );
            table.push_str(&format!("| 3G (70-120 s), {name} | {} |\n", cell(&s)));
            by_cc.push((name, s.median));
        }
    }
    table.push_str(&format!(
        "\nEach cell: median (25th-75th percentile; min-max) over {} seeds; LIA (the default) where no congestion \
         control is named. The plot is seed 1: each path's delivered rate and the goodput, per second.",
        runs.len()
    ));
    let names: Vec<&str> = if downgrade { vec!["Verizon", "AT&T"] } else { vec!["WiFi", "Verizon 4G", "AT&T 3.5G"] };
    let mut series: Vec<Series> = Vec::new();
    if let Some((g, per_path)) = runs.first() {
        let pts = |v: &[f64]| v.iter().enumerate().map(|(s, x)| (s as f64 + 0.5, Spread::of(&[*x]))).collect();
        series.push(Series { name: "goodput (all paths)".into(), points: pts(g) });
        for (k, v) in per_path.iter().enumerate() {
            series.push(Series { name: format!("{} (on the wire)", names[k]), points: pts(v) });
        }
    }
    let (id, title, setup, paper, ours) = if downgrade {
        let (before, after) = (medians[0], medians[2]);
        (
            "uplink-fig5",
            "Cellular uplink Fig. 5: an upload through a 4G-to-3G downgrade",
            "A 120 s upload over Verizon 4G (4.34 Mbit/s, 112 ms) and AT&T 3.5G (0.91 Mbit/s, 276 ms), the study's \
             mobile uplinks, queues as in Table 3; at 60 s Verizon stalls for 5 s and comes back as 3G eHRPD \
             (0.56 Mbit/s, 860 ms). Lowest-RTT sender scheduler.",
            "Before the downgrade the connection carries 5.64 Mbit/s, 30% above the best mobile single path \
             (Verizon 4G, 4.34 Mbit/s); after it 2.09 Mbit/s, twice the best single path (AT&T, 0.91 Mbit/s). The \
             Verizon flows stall about 5 s at the switch; the connection goes on.",
            format!(
                "Before the downgrade {before:.2} Mbit/s ({:.2}× Verizon 4G's 4.34), during the stall {:.2}, after it \
                 {after:.2} Mbit/s ({:.2}× AT&T's 0.91; the two paths' rates add up to 1.47 Mbit/s, the ceiling \
                 here: the paper's 2.09 used two flows per device to two server interfaces). {} After it the \
                 connection carries about AT&T's rate, not the sum: Verizon's subflow answers again 2 s after the \
                 switch (seed 1) but its window stays at a few packets. The outage's timeouts restart it from one \
                 packet, and a coupled congestion control grows a subflow by its share of the connection's \
                 window, which for a 5 kB window beside AT&T's 46 kB is about 150 bytes per 0.88 s round trip: \
                 coupling, made to take no more than the best single path where paths share a bottleneck, keeps \
                 the connection near AT&T's rate here. The same runs after the downgrade, Mbit/s: {}. The study \
                 does not say which congestion control its kernel ran.",
                before / 4.34,
                medians[1],
                after / 0.91,
                if medians[1] > 0.5 {
                    "The stall does not stop the upload: AT&T carries it alone."
                } else {
                    "The upload nearly stops during the stall."
                },
                by_cc.iter().map(|(n, m)| format!("{n} {m:.2}")).collect::<Vec<_>>().join(", "),
            ),
        )
    } else {
        (
            "uplink-fig4",
            "Cellular uplink Fig. 4: an upload through intermittent WiFi",
            "A 120 s upload over WiFi (8 Mbit/s, 30 ms), Verizon 4G and AT&T 3.5G (as in Table 3); WiFi is lost \
             at 30 s, back at 65 s, lost again at 100 s (the study: a bus through campus hotspots, back at 85 s, \
             lost at 130 s). Lowest-RTT sender scheduler. The phone's driver reports WiFi's interface down a \
             second after its last packet got through, and up when it is back (`set_path_up`), as a phone \
             leaving and entering a hotspot's coverage does: a subflow closed by an interface going down is \
             joined again when it comes up.",
            "When WiFi is lost its flows break and the four cellular flows carry on; when it comes back its flows \
             resume and carry most of the data: the upload uses WiFi's bandwidth when there and moves off it \
             without breaking the connection.",
            format!(
                "Goodput with WiFi {:.2} Mbit/s, without {:.2}, with WiFi back {:.2}, without again {:.2} (medians); \
                 the longest run of seconds without goodput is {:.0} s (median). {}",
                medians[0],
                medians[1],
                medians[2],
                medians[3],
                stalls.median,
                if medians[2] > 1.5 * medians[1] && stalls.median <= 1.0 {
                    "As in the paper: the upload moves to cellular when WiFi is lost, without stopping, and back \
                     onto WiFi when it returns. A WiFi that goes silent with its interface up is joined again too, \
                     later: the client gives its silent subflow up after the subflow idle timeout (30 s), as the \
                     server does, and joins WiFi again until it answers (PROTOCOL.md §7, \
                     `mpsim/tests/rejoin.rs`). Before that rule, found by this figure, such a WiFi was never used \
                     again: the server had forgotten the subflow the client kept probing."
                } else if stalls.median <= 1.0 {
                    "The first half is the paper's: the upload moves to cellular when WiFi is lost, without \
                     stopping. The second is NOT: WiFi's return is not used."
                } else {
                    "NOT as in the paper: the upload stalls when WiFi is lost."
                }
            ),
        )
    };
    Figure {
        id,
        title: title.into(),
        x_label: "time, s".into(),
        y_label: "Mbit/s".into(),
        x_names: None,
        series,
        reference: None,
        table: Some(table),
        setup: setup.into(),
        paper: paper.into(),
        ours,
        radio: None,
    }
}

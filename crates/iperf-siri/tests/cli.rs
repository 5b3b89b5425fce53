//! The `iperf-siri` binary end to end over loopback: server and client as separate
//! processes, as users run them.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

mod common;

use common::{client, json, key, one_at_a_time, run, server, BIN};

fn stderr_line(out: &Output) -> String {
    let e = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "one line expected: {e}");
    assert!(e.starts_with("iperf-siri: ") && !e.contains("panicked"), "{e}");
    e
}

fn wait_exit(mut c: Child, limit: Duration) -> std::process::ExitStatus {
    let t = std::time::Instant::now();
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > limit {
            let _ = c.kill();
            panic!("the server did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn bad_input_is_one_line_and_a_non_zero_exit() {
    let _serial = one_at_a_time();
    for (args, expect) in [
        (&["-c", "127.0.0.1", "-p", "70000"][..], "--port"),
        (&["-c", "127.0.0.1", "--scheduler", "fastest"], "unknown scheduler 'fastest'"),
        (&["-c", "127.0.0.1", "--requests", "0"], "--requests"),
        (&["-c", "127.0.0.1", "-t", "soon"], "not a duration"),
        (&["-c", "127.0.0.1", "-m", "no-such-if0"], "no interface named 'no-such-if0'"),
        (&["-c", "127.0.0.1", "-n", "1M"], "--mode bulk"),
        (&["-c", "no-such-host.invalid"], "cannot resolve"),
        (&["-c", "127.0.0.1", "-p", "9", "--connect-timeout", "0.5"], "no answer from 127.0.0.1:9"),
        (&["--logfile", "/no/such/dir/log", "-c", "127.0.0.1"], "--logfile"),
        // The protocol's limits, refused before connecting (issue 19).
        (&["-c", "127.0.0.1", "--burst-bytes", "17M"], "exceeds the protocol's frame limit"),
        (&["-c", "127.0.0.1", "--writes", "1000", "--write-size", "10..20000"], "frame limit"),
        (&["-c", "127.0.0.1", "--requests", "4294967295"], "--requests must be 1 to 1000000"),
        (&["-c", "127.0.0.1", "--wait", "7200s"], "--wait must be at most 1 h"),
        (&["-c", "127.0.0.1", "--response-bytes", "17M"], "--response-bytes must be at most"),
        // Causes named at once, not after the connect timeout.
        (&["-c", "127.0.0.1", "-p", "0"], "port 0"),
        (&["-c", "::1", "-m", "127.0.0.1,127.0.0.2@cellular"], "address family mismatch: ::1 is IPv6"),
        // Issue 35: values that ran empty tests, read as flags, or failed only afterwards.
        (&["-c", "127.0.0.1", "--mode", "bulk", "-n", "0"], "-n/--bytes must be more than 0"),
        (&["-c", "127.0.0.1", "--mode", "bulk", "-t", "0"], "-t/--time must be more than 0"),
        (&["-c", "127.0.0.1", "--burst-bytes", "0"], "--burst-bytes must be more than 0"),
        (&["-c", "127.0.0.1", "--connect-timeout", "0"], "--connect-timeout must be more than 0"),
        (&["-c", "127.0.0.1", "--oracle-period", "0"], "--oracle-period must be at least 1ms"),
        (&["-c", "127.0.0.1", "-m", ","], "-m: an empty interface name"),
        (&["-c", "127.0.0.1", "--plot", "/nonexistent/x.svg"], "--plot /nonexistent/x.svg"),
        (&["-c", "127.0.0.1", "--max-tests", "2"], "--max-tests is a server option"),
    ] {
        let e = stderr_line(&client(args));
        assert!(e.contains(expect), "{args:?}: {e}");
    }
    // Without a server key, and with one that is not a key.
    for (args, expect) in [
        (&["-c", "127.0.0.1"][..], "the server is not authenticated: give --server-key KEY"),
        (&["-c", "127.0.0.1", "--server-key", "AAAA"], "32 bytes"),
        (&["-c", "127.0.0.1", "--server-key", "not base64!"], "base64"),
        (&["-s", "--key", "/no/such/key.pem"], "--key /no/such/key.pem"),
        (&[], "say -s"),
        (&["demo", "--fail-after", "9", "--requests", "3"], "--fail-after"),
    ] {
        let e = stderr_line(&run(args));
        assert!(e.contains(expect), "{args:?}: {e}");
    }
    // Every numeric flag at 0, -1 and beyond its maximum: refused in one line naming the flag
    // (a value of 0 that means something, as `-i 0` or `--wait 0`, is left out).
    let c = ["-c", "127.0.0.1"];
    let table: &[(&str, &[&str])] = &[
        ("--port", &["-1", "65536"]),
        ("--time", &["0", "-1", "31536001"]),
        ("--bytes", &["0", "-1", "2000T"]),
        ("--interval", &["-1", "0.05"]),
        ("--connect-timeout", &["0", "-1"]),
        ("--oracle-period", &["0", "-1"]),
        ("--sloss", &["0", "-1", "1.5"]),
        ("--requests", &["0", "-1", "1000001"]),
        ("--bursts", &["0", "-1", "256"]),
        ("--writes", &["0", "-1", "1001"]),
        ("--burst-bytes", &["0", "-1", "17M"]),
        ("--burst-gap", &["-1", "3601s"]),
        ("--wait", &["-1", "3601s"]),
        ("--response-bytes", &["-1", "17M"]),
        ("--ir-bytes", &["-1", "17M"]),
        ("--seed", &["-1", "18446744073709551616"]),
    ];
    for (flag, values) in table {
        for v in *values {
            let mode: &[&str] = if ["--time", "--bytes"].contains(flag) { &["--mode", "bulk"] } else { &[] };
            let args: Vec<&str> = c.iter().chain(mode).copied().chain([*flag, *v]).collect();
            let e = stderr_line(&client(&args));
            let short = flag.trim_start_matches('-');
            assert!(e.contains(short), "{args:?}: the flag is not named: {e}");
        }
    }
    for (flag, values) in [("--max-tests", ["0", "-1", "1001"])] {
        for v in values {
            let e = stderr_line(&run(&["-s", flag, v]));
            assert!(e.contains(flag), "-s {flag} {v}: {e}");
        }
    }
    // A server refuses a client's flag, and -J puts every failure on stdout as JSON too.
    let e = stderr_line(&run(&["-s", "-n", "5"]));
    assert!(e.contains("-n/--bytes is a client option"), "{e}");
    let out = client(&["-J", "-c", "127.0.0.1", "-p", "-1"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["error"].as_str().unwrap().contains("--port"), "{v}");
    let out = client(&["-J", "-c", "127.0.0.1", "-p", "9", "--connect-timeout", "0.3"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["error"].as_str().unwrap().contains("no answer"), "{v}");
    let v = run(&["--version"]);
    assert!(v.status.success() && String::from_utf8_lossy(&v.stdout).starts_with("iperf-siri "));
}

#[test]
fn siri_over_two_loopback_paths_fills_the_json() {
    let _serial = one_at_a_time();
    let (srv, port) = server(&["-1", "--scheduler", "last-received"]);
    let svg = std::env::temp_dir().join(format!("iperf-siri-test-{}.svg", std::process::id()));
    let qlogs = std::env::temp_dir().join(format!("iperf-siri-qlog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&qlogs);
    let out = client(&[
        "--qlog",
        qlogs.to_str().unwrap(),
        "-c",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-m",
        "127.0.0.1,127.0.0.2",
        "--requests",
        "2",
        "--burst-gap",
        "50ms",
        "--wait",
        "0.2s",
        "-i",
        "0.2",
        "-J",
        "--test-id",
        "loop-1",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let j = json(&out);
    // iperf3's layout, in its order.
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["start", "intervals", "requests", "events", "end"]);
    // The connection's events: connected, then fullmesh's two subflows, each on its path.
    let events = j["events"].as_array().unwrap();
    assert_eq!(events[0]["kind"], "connected", "{events:?}");
    let joined: Vec<&Value> = events.iter().filter(|e| e["kind"] == "subflow_established").collect();
    assert_eq!(joined.iter().map(|e| e["path"].as_u64().unwrap()).collect::<Vec<_>>(), [0, 1], "{events:?}");
    assert!(events.windows(2).all(|w| w[0]["time"].as_f64() <= w[1]["time"].as_f64()), "{events:?}");
    let start = &j["start"];
    for k in ["connected", "version", "system_info", "timestamp", "test_start", "multipath", "connecting_to"] {
        assert!(!start[k].is_null(), "start.{k} missing: {start}");
    }
    assert_eq!(start["test_id"], "loop-1");
    assert_eq!(start["test_start"]["bursts"], 9);
    assert_eq!(start["connecting_to"]["port"], port);
    let intervals = j["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 3, "{intervals:?}");
    for i in intervals {
        assert!(i["sum"]["seconds"].as_f64().unwrap() > 0.0 && i["streams"].is_array());
        assert_eq!(i["interfaces"].as_array().unwrap().len(), 2);
    }
    let requests = j["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2);
    for (k, r) in requests.iter().enumerate() {
        assert_eq!(r["index"], k + 1);
        assert!(r["delay_ms"].as_f64().unwrap() > 0.0, "{r}");
        let irs = r["ir_delays_ms"].as_array().unwrap();
        assert_eq!(irs.len(), 8, "{r}");
        assert!(irs.iter().all(|d| d.as_f64().is_some_and(|d| d > 0.0)), "{r}");
    }
    let end = &j["end"];
    assert_eq!(end["delay"]["requests_answered"], 2);
    assert!(end["delay"]["max_ms"].as_f64().unwrap() >= end["delay"]["p50_ms"].as_f64().unwrap());
    let ifs = end["interfaces"].as_array().unwrap();
    assert_eq!((ifs[0]["kind"].as_str(), ifs[1]["kind"].as_str()), (Some("wifi"), Some("cellular")));
    // fullmesh: both paths carried packets, and the cellular one has an energy estimate.
    assert!(ifs.iter().all(|i| i["packets_sent"].as_u64().unwrap() > 0), "{ifs:?}");
    let cell = &end["cellular"];
    assert_eq!(cell["interface"], "127.0.0.2");
    assert!(cell["energy_j"].as_f64().unwrap() > 0.3 && cell["promotions"] == 1, "{cell}");
    assert_eq!(end["server_output"]["answered"], 2);
    assert_eq!(end["server_output"]["scheduler"], "last-received");
    assert_eq!(end["sum_received"]["bytes"], end["sum_sent"]["bytes"]);
    assert!(j.get("error").is_none());
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg") && plot.contains("<path"), "{plot}");
    assert!(wait_exit(srv, Duration::from_secs(10)).success(), "-1: the server exits after one test");
    // --qlog: the client's one connection, one JSON-SEQ file; both subflows in it.
    let logs: Vec<_> = std::fs::read_dir(&qlogs).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let name = logs[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(name.starts_with("client-") && name.ends_with(".sqlog"), "{name}");
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    let records: Vec<Value> = text.split('\x1e').skip(1).map(|r| serde_json::from_str(r.trim_end()).unwrap()).collect();
    assert_eq!(records[0]["qlog_format"], "JSON-SEQ");
    // Packets sent per subflow: both of fullmesh's are there, one carried the requests (with
    // two equal loopback paths lowest-RTT may pick either, and leave the other its join and
    // little else).
    let mut sent = std::collections::BTreeMap::<u64, usize>::new();
    for e in records.iter().filter(|e| e["name"] == "transport:packet_sent") {
        *sent.entry(e["data"]["path_id"].as_u64().unwrap()).or_default() += 1;
    }
    assert!(sent.values().max().is_some_and(|&n| n > 20) && sent.len() >= 2, "packets sent per subflow: {sent:?}");
    let join = |e: &&Value| e["name"] == "transport:packet_sent" && e["data"]["header"]["packet_type"] == "join";
    assert!(records.iter().any(|e| join(&e)), "the join is in the log");
    // `iperf-siri timeline` draws it: a lane per subflow and the radio on cellular (path 1).
    let drawn = qlogs.join("t.svg");
    let t = run(&["timeline", logs[0].to_str().unwrap(), drawn.to_str().unwrap()]);
    assert!(t.status.success(), "{t:?}");
    let pic = std::fs::read_to_string(&drawn).unwrap();
    for lane in ["subflow 0 (path 0)", "subflow 1 (path 1, cellular)", "decisions", "radio (lte)"] {
        assert!(pic.contains(&format!(">{lane}<")), "lane {lane:?} missing");
    }
    // A file that is no qlog (the plot) is refused in one line.
    let bad = stderr_line(&run(&["timeline", svg.to_str().unwrap(), drawn.to_str().unwrap()]));
    assert!(bad.contains("not a qlog"), "{bad}");
    let _ = std::fs::remove_file(&svg);
    let _ = std::fs::remove_dir_all(&qlogs);
}

#[test]
fn bulk_both_ways_counts_every_byte() {
    let _serial = one_at_a_time();
    let (mut srv, port) = server(&[]);
    let p = port.to_string();
    let up = json(&client(&["-c", "127.0.0.1", "-p", &p, "--mode", "bulk", "-n", "2M", "-J", "-i", "0"]));
    assert_eq!(up["end"]["sum_received"]["bytes"], 2 << 20);
    assert_eq!(up["end"]["sum_sent"]["bytes"], 2 << 20);
    assert!(up["end"]["sum_received"]["bits_per_second"].as_f64().unwrap() > 0.0);
    assert!(up["requests"].as_array().unwrap().is_empty());
    let down = json(&client(&["-c", "127.0.0.1", "-p", &p, "--mode", "bulk", "-n", "1M", "-R", "-J", "-i", "0"]));
    assert_eq!(down["end"]["sum_received"]["bytes"], 1 << 20);
    assert_eq!(down["end"]["server_output"]["bytes_sent"], 1 << 20);
    // By time, with the human output in a log file.
    let log = std::env::temp_dir().join(format!("iperf-siri-log-{}.txt", std::process::id()));
    let out = client(&["-c", "127.0.0.1", "-p", &p, "--mode", "bulk", "-t", "0.5", "--logfile", log.to_str().unwrap()]);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains(" sender") && text.contains(" receiver") && text.contains("iperf-siri Done."), "{text}");
    let _ = std::fs::remove_file(&log);
    srv.kill().unwrap();
}

#[test]
fn a_busy_server_and_a_version_mismatch_are_refused_clearly() {
    let _serial = one_at_a_time();
    let (mut srv, port) = server(&["--max-tests", "1"]);
    let p = port.to_string();
    let long = Command::new(BIN)
        .args([
            "--server-key",
            key().1.as_str(),
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "--requests",
            "1",
            "--burst-gap",
            "400ms",
        ])
        .args(["-i", "0"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // The long test holds the one slot for 9 bursts 400 ms apart; the probe comes 1 s after it
    // started (time for a debug build on a loaded machine to connect), well within them.
    std::thread::sleep(Duration::from_millis(1000));
    let busy = stderr_line(&client(&["-c", "127.0.0.1", "-p", &p, "--requests", "1"]));
    assert!(busy.contains("busy"), "{busy}");
    assert!(wait_exit(long, Duration::from_secs(20)).success());
    let v = stderr_line(&client(&["-c", "127.0.0.1", "-p", &p, "--protocol-version", "99"]));
    assert!(v.contains("version mismatch") && v.contains("99"), "{v}");
    // The server is still serving after both.
    let ok =
        json(&client(&["-c", "127.0.0.1", "-p", &p, "--requests", "1", "--burst-gap", "10ms", "--bursts", "2", "-J"]));
    assert_eq!(ok["end"]["delay"]["requests_answered"], 1);
    srv.kill().unwrap();
}

#[test]
fn the_demo_runs_three_setups_and_multimob_opens_cellular_only_after_the_failure() {
    let _serial = one_at_a_time();
    let timeline = std::env::temp_dir().join(format!("iperf-siri-timeline-{}.svg", std::process::id()));
    let tl = timeline.to_str().unwrap();
    // fullmesh and backup join cellular at the start; MultiMob only once the oracle has judged
    // WiFi bad, which is once WiFi has failed: after the first request (2.4 s of bursts) and
    // half the wait. (Its first packet on cellular may come sooner: a WARM, when the oracle
    // suspects WiFi.) This runs in real time, and on CI's loaded machine a stall of the
    // emulator is a real outage to the protocol: the oracle may judge WiFi bad before the
    // scripted failure (it did once, joining cellular at 1.6 s). So every try asserts the
    // cause, that cellular is joined only after WiFi failed or was judged bad, and up to three
    // tries find one where that came with the scripted failure, for the rest. That no verdict
    // comes without losses is proven in virtual time (`mpsim/tests/oracle.rs`, `degrade.rs`).
    let failed_at = 2.4 + 0.3;
    let (mut j, mut joined) = (Value::Null, 0.0);
    for attempt in 1..=3 {
        j = json(&run(&[
            "demo",
            "--requests",
            "2",
            "--wait",
            "0.6s",
            "--fail-after",
            "1",
            "--restore-after",
            "0",
            "-J",
            "--timeline",
            tl,
        ]));
        let runs = j["demo"].as_array().unwrap();
        let labels: Vec<&str> = runs.iter().map(|r| r["run"].as_str().unwrap()).collect();
        assert_eq!(labels, ["lowest-rtt + fullmesh", "backup", "MultiMob"]);
        for r in runs {
            assert_eq!(r["report"]["end"]["delay"]["requests_answered"], 2, "{}", r["run"]);
        }
        let events = runs[2]["report"]["events"].as_array().unwrap();
        let time_of = |hit: &dyn Fn(&Value) -> bool| {
            events.iter().find(|e| hit(e)).and_then(|e| e["time"].as_f64()).unwrap_or(f64::INFINITY)
        };
        joined = time_of(&|e| e["kind"] == "subflow_established" && e["path"] == 1);
        let cause = time_of(&|e| {
            e["path"] == 0 && (e["kind"] == "subflow_failed" || (e["kind"] == "verdict" && e["detail"] != "clear"))
        });
        assert!(joined.is_finite(), "MultiMob never joined cellular: {events:?}");
        assert!(joined >= cause, "MultiMob joined cellular at {joined} s, before WiFi failed: {events:?}");
        if joined > failed_at {
            break;
        }
        println!("try {attempt}: WiFi looked failed at {cause} s, before the scripted failure (the machine stalled)");
    }
    assert!(joined > failed_at, "three tries, each with WiFi judged failed before the scripted failure");
    let runs = j["demo"].as_array().unwrap();
    let first_cell = |k: usize| runs[k]["report"]["end"]["cellular"]["first_packet_s"].as_f64();
    assert!(first_cell(0).unwrap() < 1.0, "{:?}", first_cell(0));
    assert!(first_cell(1).unwrap() < 1.0, "{:?}", first_cell(1));
    // MultiMob's failover in its JSON events, in order: WiFi's subflow failed, the oracle's
    // bad verdict on WiFi, the cellular subflow joined.
    let events: Vec<String> = runs[2]["report"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{} {}", e["kind"].as_str().unwrap(), e["path"]))
        .collect();
    let mut at = 0;
    for want in ["subflow_established 0", "subflow_failed 0", "verdict 0", "subflow_established 1"] {
        match events[at..].iter().position(|e| e == want) {
            Some(k) => at += k + 1,
            None => panic!("{want:?} missing after {at}: {events:?}"),
        }
    }
    // The emulator's LTE radio (the default --radio): MultiMob woke it once, for the failover,
    // and the first burst after the failure waited for that promotion (0.26 s); fullmesh's
    // join at the start woke it too.
    let radio = |k: usize| runs[k]["report"]["end"]["cellular"]["promotions"].as_u64();
    assert_eq!((radio(0), radio(2)), (Some(1), Some(1)));
    let second = &runs[2]["report"]["requests"][1];
    let worst = second["ir_delays_ms"].as_array().unwrap().iter().filter_map(|d| d.as_f64()).fold(0.0, f64::max);
    if first_cell(2).unwrap() > failed_at {
        assert!(worst >= 260.0, "the failover's burst waited {worst} ms: {second}");
    } else {
        // A WARM woke the radio before the failure: the failover found it awake.
        assert!(worst < 260.0, "the radio was warm, yet the burst waited {worst} ms: {second}");
    }
    // The MultiMob run's timeline: its lanes, the failover on WiFi's, the join on cellular's,
    // the oracle's verdict, the radio's one promotion, and every burst's wait.
    let pic = std::fs::read_to_string(&timeline).unwrap();
    let _ = std::fs::remove_file(&timeline);
    let lanes =
        ["subflow 0 (path 0)", "subflow 1 (path 1, cellular)", "decisions", "radio (lte)", "requests (answer waits)"];
    for lane in lanes {
        assert!(pic.contains(&format!(">{lane}<")), "lane {lane:?} missing");
    }
    let count = |what: &str| pic.matches(what).count();
    assert_eq!(count(r#"class="burst""#), 2 * 9, "a bar per burst");
    assert!(pic.contains(">potentially failed<") && count(">established<") == 2, "the subflows' marks");
    assert!(pic.contains(">path 0: bad<"), "the oracle's verdict on WiFi");
    assert!(pic.contains("<title>Promoting</title>") && pic.contains(">wakes 1,"), "the radio woke once");
    assert!(count(r#"class="lost""#) > 0, "WiFi's losses");
}

/// `--path-manager backup` on two paths and no failure (issue 17): the cellular backup
/// subflow carries its join and nothing else, no data and no keep-alive (those go on WiFi,
/// the primary); the JSON and the closing summary say so.
#[test]
fn a_backup_that_is_never_needed_carries_only_its_join() {
    let _serial = one_at_a_time();
    // A client with `--path-manager backup` over two loopback paths, against a one-off server.
    let backup_run = |requests: &str, extra: &[&str]| {
        let (srv, port) = server(&["-1"]);
        let p = port.to_string();
        let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-m", "127.0.0.1,127.0.0.2", "--path-manager", "backup"];
        args.extend_from_slice(&["--requests", requests, "--burst-gap", "50ms", "--wait", "0.3s", "-i", "0"]);
        args.extend_from_slice(extra);
        let out = client(&args);
        assert!(wait_exit(srv, Duration::from_secs(10)).success());
        out
    };
    // On loopback the primary's probe timeouts are milliseconds: a loaded machine that holds
    // the peer's process longer (CI's, running debug builds) makes the primary look failed, and
    // then the backup rightly carries the data. So the claim is about a run where the primary
    // never looked failed: up to three tries find one; every try answers every request.
    let mut j = Value::Null;
    for attempt in 1..=3 {
        j = json(&backup_run("3", &["-J"]));
        assert_eq!(j["end"]["delay"]["requests_answered"], 3);
        let events = j["events"].as_array().unwrap();
        if !events.iter().any(|e| e["kind"] == "subflow_failed") {
            break;
        }
        println!("try {attempt}: the primary looked failed (the machine stalled the peer): {events:?}");
    }
    let end = &j["end"];
    let cell = &end["cellular"];
    assert_eq!(cell["subflows"], 1, "{cell}");
    assert_eq!(cell["data_bytes_sent"], 0, "{cell}");
    assert_eq!(cell["data_bytes_received_twice"], 0, "{cell}");
    // The join (MP_JOIN, SYN/ACK, ACK, its acknowledgement) and the connection's close.
    let (sent, received) = (cell["packets_sent"].as_u64().unwrap(), cell["packets_received"].as_u64().unwrap());
    assert!(sent <= 4 && received <= 4, "the backup carried more than its join: {cell}");
    let subflows = end["connection"]["subflows"].as_array().unwrap();
    let backup = subflows.iter().find(|f| f["path"] == 1).unwrap();
    assert_eq!(backup["backup"], true, "{backup}");
    // The human summary says it too (again in a run where the primary never looked failed).
    let said = "0 stream bytes sent (no data: joins and keep-alives only)";
    let mut text = String::new();
    for _ in 0..3 {
        text = String::from_utf8_lossy(&backup_run("1", &[]).stdout).to_string();
        if text.contains(said) {
            break;
        }
    }
    assert!(text.contains(said), "{text}");
}

/// Issue 20 end to end: `keygen` writes a private key only its owner can read and prints the
/// public key; a client given another key refuses the server in one line and sends it nothing
/// (the server stays free for the next test); `--insecure` connects with a warning.
#[test]
fn the_server_is_authenticated_by_the_key_the_client_was_given() {
    let _serial = one_at_a_time();
    use std::os::unix::fs::PermissionsExt;
    let (file, public) = key();
    assert_eq!(std::fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(std::fs::read_to_string(file).unwrap().starts_with("-----BEGIN PRIVATE KEY-----"));
    assert_eq!(public.len(), 44, "{public}");
    let again = stderr_line(&run(&["keygen", file]));
    assert!(again.contains("exists"), "keygen never overwrites a key: {again}");
    let (mut srv, port) = server(&[]);
    let p = port.to_string();
    // Another server's key (RFC 8032's test key).
    let other = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";
    let t0 = std::time::Instant::now();
    let e = stderr_line(&run(&["-c", "127.0.0.1", "-p", &p, "--server-key", other, "--requests", "1"]));
    assert!(e.contains("did not prove the server key"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    // --insecure: a warning, then the test runs.
    let out = run(&["-c", "127.0.0.1", "-p", &p, "--insecure", "--requests", "1", "--burst-gap", "10ms", "-J"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: the server is not authenticated"), "{out:?}");
    assert_eq!(json(&out)["end"]["delay"]["requests_answered"], 1);
    // And the right key, with the old one beside it (rotation).
    let ok = json(&client(&[
        "-c",
        "127.0.0.1",
        "-p",
        &p,
        "--server-key",
        other,
        "--requests",
        "1",
        "--burst-gap",
        "10ms",
        "-J",
    ]));
    assert_eq!(ok["end"]["delay"]["requests_answered"], 1);
    srv.kill().unwrap();
}

/// A connection that never sends its test request holds the one-test server 3 s, not 30
/// (issue 19): the server drops it with one line and, under -1, exits.
#[test]
fn a_silent_client_is_dropped_after_three_seconds() {
    let _serial = one_at_a_time();
    let (srv, port) = server(&["-1"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let t0 = std::time::Instant::now();
    let _held = rt.block_on(async {
        let key: mpudp::PublicKey = key().1.parse().unwrap();
        let addr = format!("127.0.0.1:{port}");
        mpudp::MpStream::connect(addr, mpudp::Options::new().server_key(key)).await.unwrap()
    });
    let status = wait_exit(srv, Duration::from_secs(10));
    let waited = t0.elapsed();
    assert!(!status.success(), "-1 after a failed test exits non-zero");
    // 3 s and the time to start and end a debug build's process (on a loaded machine, CI's,
    // seconds): the bound is loose, the claim being 3 s, not the 30 of before.
    assert!(waited >= Duration::from_secs(3) && waited < Duration::from_secs(8), "{waited:?}");
}

/// A client of the test server on `port` running a long Siri workload (1000 requests, timed by
/// `workload`) in the background, its standard error to `stderr`.
fn background_client(port: &str, workload: &[&str], stderr: Stdio) -> Child {
    Command::new(BIN)
        .args(["--server-key", key().1.as_str(), "-c", "127.0.0.1", "-p", port, "-i", "0", "--requests", "1000"])
        .args(workload)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Issue 35: a client killed mid-test holds nothing: another is served at once (the server
/// runs several tests), and on a one-test server its slot is free within its workload's
/// longest silence (1 s here) and 3 s, found by a client retrying every 200 ms.
#[test]
fn a_killed_client_holds_no_slot() {
    let _serial = one_at_a_time();
    // The bounds leave a loaded machine (CI's, running debug builds) seconds for the next
    // client's own run, and stay below the 10 s peer timeout that would free a held slot.
    for (extra, bound) in [(&[][..], Duration::from_secs(5)), (&["--max-tests", "1"][..], Duration::from_secs(8))] {
        let (mut srv, port) = server(extra);
        let p = port.to_string();
        let mut victim = background_client(&p, &["--wait", "1s", "--burst-gap", "100ms"], Stdio::null());
        std::thread::sleep(Duration::from_millis(1_500));
        victim.kill().unwrap();
        let _ = victim.wait();
        let killed = std::time::Instant::now();
        // The next client, repeated while the server says it is busy.
        let served = loop {
            let out =
                client(&["-c", "127.0.0.1", "-p", &p, "--requests", "1", "--bursts", "2", "--burst-gap", "10ms", "-J"]);
            if out.status.success() {
                break killed.elapsed();
            }
            let e = String::from_utf8_lossy(&out.stderr).to_string();
            assert!(e.contains("busy"), "{e}");
            assert!(killed.elapsed() < Duration::from_secs(15), "never served");
            std::thread::sleep(Duration::from_millis(200));
        };
        println!("{extra:?}: the next client was served {} ms after the kill", served.as_millis());
        assert!(served < bound, "{extra:?}: served {served:?} after the kill");
        srv.kill().unwrap();
        let _ = srv.wait();
    }
}

/// A client running `workload` whose server is killed 1.5 s in (its first request answered):
/// how long after the kill the client exited, having said the peer stopped answering.
fn killed_server_noticed_after(workload: &[&str]) -> Duration {
    let (mut srv, port) = server(&[]);
    let c = background_client(&port.to_string(), workload, Stdio::piped());
    std::thread::sleep(Duration::from_millis(1_500));
    srv.kill().unwrap();
    let _ = srv.wait();
    let t = std::time::Instant::now();
    let out = c.wait_with_output().unwrap();
    let waited = t.elapsed();
    let e = String::from_utf8_lossy(&out.stderr).to_string();
    println!("client exited {} ms after the server's kill: {e}", waited.as_millis());
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("the peer stopped answering"), "{e}");
    waited
}

/// A killed server is noticed within the peer timeout (10 s), and the client says so:
/// - issue 35: after the client's next request goes unanswered;
/// - issue 52: while the client is in its wait between requests, as it asks the transport
///   each second whether the server is still there. Before, idle, the client waited for its
///   idle timeout (28.4 s).
///
/// The two cases run at once (each with its own server), so the test takes one's time.
#[test]
fn a_killed_server_is_noticed_within_the_peer_timeout_mid_request_and_during_a_wait() {
    let _serial = one_at_a_time();
    let mid_request = std::thread::spawn(|| killed_server_noticed_after(&["--wait", "200ms", "--burst-gap", "50ms"]));
    let in_wait =
        std::thread::spawn(|| killed_server_noticed_after(&["--wait", "25s", "--bursts", "2", "--burst-gap", "50ms"]));
    let (mid_request, in_wait) = (mid_request.join().unwrap(), in_wait.join().unwrap());
    // The peer timeout (10 s) after the next request, with room for a loaded machine: well
    // below the 30 s idle timeout that would otherwise end it.
    assert!(mid_request < Duration::from_secs(20), "{mid_request:?}");
    // The next probe (within a second) and the peer timeout, with room for a loaded machine:
    // well below the idle timeout and the wait.
    assert!(in_wait < Duration::from_secs(16), "{in_wait:?}");
}

/// Issue 35: a squatter (as many connections as the server has slots, from one address, that
/// stay silent, each dropped after 3 s and made again at once) beside a client from another
/// address that runs its tests: the client is served, as the squatter holds at most half the
/// slots.
#[test]
fn a_squatter_does_not_keep_others_out() {
    let _serial = one_at_a_time();
    let (mut srv, port) = server(&[]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let squat = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let key: mpudp::PublicKey = key().1.parse().unwrap();
                let opts = mpudp::Options::new()
                    .server_key(key)
                    .interface(mpudp::Interface::unbound("127.0.0.2:0".parse().unwrap()));
                let ep = mpudp::MpEndpoint::client(opts).unwrap();
                let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let mut held = Vec::new();
                    for _ in 0..4 {
                        if let Ok(s) = ep.connect(addr).await {
                            held.push(s);
                        }
                    }
                    // The server drops each after 3 s of silence; the squatter is back at once
                    // (and stops within 0.1 s when the test is done).
                    for _ in 0..31 {
                        if stop.load(std::sync::atomic::Ordering::Relaxed) {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    drop(held);
                }
            });
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    // Three clients, each a request long (2.4 s), one after another: they meet the squatter
    // at different points of its 3.1 s cycle.
    for _ in 0..3 {
        let out = client(&["-c", "127.0.0.1", "-p", &port.to_string(), "--requests", "1", "-J"]);
        assert_eq!(json(&out)["end"]["delay"]["requests_answered"], 1);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    squat.join().unwrap();
    srv.kill().unwrap();
    let _ = srv.wait();
    // The next test measures paths on this machine: let the dying server's traffic pass.
    std::thread::sleep(Duration::from_secs(2));
}

#[test]
fn fleet_rules_print_a_ruleset_and_mistakes_are_one_line() {
    let svc = ["fleet-rules", "--service", "10.0.0.1:443", "--ids", "3"];
    let with = |extra: &[&str]| run(&[&svc[..], extra].concat());
    let out = with(&["--server", "0=10.0.0.2", "--server", "1=10.0.0.3,drained", "--server", "2=10.0.0.4,dead"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // Byte 5 is server 2's id (5 mod 3), dead: it goes to a live server, never to 10.0.0.4.
    assert!(text.contains("notrack") && text.contains("server 1 at 10.0.0.3: drained"), "{text}");
    assert!(!text.contains(": 10.0.0.4") && text.contains("1 : 10.0.0.3"), "{text}");
    // The kernel takes it (`nft -c`: checked, not loaded), where nft is installed and root.
    let nft = Command::new("nft").arg("--version").output().is_ok_and(|o| o.status.success());
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:\t0")));
    if nft && root {
        let mut c =
            Command::new("nft").args(["-c", "-f", "-"]).stdin(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        std::io::Write::write_all(&mut c.stdin.take().unwrap(), text.as_bytes()).unwrap();
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "nft -c: {}", String::from_utf8_lossy(&o.stderr));
    } else {
        println!("SKIPPED: nft -c (needs nftables and root)");
    }
    // An IPv6 service (issue 56): ip6 rules, which the kernel takes too.
    let v6 = run(&[
        "fleet-rules",
        "--service",
        "[fd00::9:1]:5201",
        "--ids",
        "2",
        "--server",
        "0=fd00::2",
        "--server",
        "1=fd00::3",
    ]);
    assert!(v6.status.success(), "{}", String::from_utf8_lossy(&v6.stderr));
    let text6 = String::from_utf8(v6.stdout).unwrap();
    assert!(text6.contains("table ip6 mpudp_fleet {") && text6.contains("ip6 saddr set fd00::9:1"), "{text6}");
    if nft && root {
        let mut c =
            Command::new("nft").args(["-c", "-f", "-"]).stdin(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        std::io::Write::write_all(&mut c.stdin.take().unwrap(), text6.as_bytes()).unwrap();
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "nft -c (IPv6): {}", String::from_utf8_lossy(&o.stderr));
    }
    for (args, expect) in [
        (&["--server", "0=fd00::2"][..], "not of the service's family"),
        (&["--server", "0=10.0.0.2,asleep"][..], "ID=ADDR"),
        (&["--server", "0=10.0.0.2,drained"], "no live server takes new connections"),
        (&["--server", "3=10.0.0.2"], "server id 3 is out of range"),
    ] {
        let e = stderr_line(&with(args));
        assert!(e.contains(expect), "{args:?}: {e}");
    }
    for (args, expect) in [
        (&["-s", "--fleet", "1/3"][..], "--fleet-secret"),
        (&["-s", "--fleet", "3/3", "--fleet-secret", "/x"], "ID/IDS"),
        (
            &["-s", "-p", "0", "--fleet", "1/3", "--fleet-secret", "/nonexistent/secret"],
            "--fleet-secret /nonexistent/secret",
        ),
    ] {
        let e = stderr_line(&run(args));
        assert!(e.contains(expect), "{args:?}: {e}");
    }
}

use mpsim::apps::{Siri, SiriConfig};
use mpsim::*;
#[test]
fn dbg() {
    let mut sim = Sim::new(1, multimob_client(oracle::Config::default()), multimob_server(), multimob_backup_paths()).unwrap();
    sim.at(ms(4_000), 0, PathEvent::Down);
    sim.at(ms(14_000), 0, PathEvent::Up);
    let mut app = Siri::new(SiriConfig { requests: 3, ..SiriConfig::default() }, 1);
    sim.run(ms(60_000), |s| app.drive(s));
    for r in &app.results { eprintln!("req start {} final {:?} irs {:?}", r.start/1000, r.delay.map(|d| d/1000), r.ir_delays.iter().map(|d| d.map(|x| x/1000)).collect::<Vec<_>>()); }
    for e in app.events.iter().filter(|e| !matches!(e.2, mpcore::Event::Readable)) { eprintln!("{:?}", e); }
    for p in 0..2 { for e in sim.path_log(p).iter().filter(|e| e.time > 7_600_000 && e.time < 7_760_000) { eprintln!("path {p} {:?} {} {} {:?}", e.dir, e.time, e.size, e.verdict); } }
}

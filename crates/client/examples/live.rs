//! The client library in a nutshell: attach to a running .NET process (`live --pid PID`) or start
//! one (`live dotnet app.dll ...`), print its hottest method once a second for five seconds, then
//! finish (an attached process is detached and runs on) and summarise the final profile.
use sonde_client::{Options, Recording};
use sonde_profile::Analysis;
use std::time::Duration;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = Options::sampling(1000);
    let mut recording = match args.as_slice() {
        [flag, pid] if flag == "--pid" => Recording::attach(pid.parse()?, &options)?.0,
        command => Recording::launch(command, &options)?,
    };
    for update in recording.updates(Duration::from_secs(1)).take(5) {
        let profile = &update.profile;
        let analysis = Analysis::new(profile);
        let hottest = analysis.methods().iter().enumerate().max_by_key(|(_, m)| m.self_samples);
        match hottest {
            Some((id, stats)) => {
                println!("{:>8} samples  {}", stats.self_samples, profile.methods[id].name.escape_debug())
            }
            None => println!("{:>8} samples", 0),
        }
    }
    let profile = recording.finish()?;
    println!("final: {} methods, {} call-tree nodes", profile.methods.len(), profile.nodes.len());
    Ok(())
}

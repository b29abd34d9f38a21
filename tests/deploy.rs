//! The scale-out recipes run as written. No container engine runs here, so
//! the Dockerfile is checked for consistency with the repository (what it
//! copies exists, the binary it builds is the one it runs); the Slurm and
//! Kubernetes recipes' shell commands run locally against the built
//! binary, on a tiny simulation.

mod common;

use common::scratch;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let p = repo().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The directory of the built `locklab`, to put first on PATH.
fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_locklab"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn path_with(dirs: &[&Path]) -> std::ffi::OsString {
    let mut all: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    all.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(all).unwrap()
}

/// The image tag the Dockerfile's first comment builds (`docker build -t TAG .`).
fn image_tag() -> String {
    let d = read("Dockerfile");
    let at = d
        .find("docker build -t ")
        .expect("the Dockerfile says how to build it")
        + 16;
    d[at..].split_whitespace().next().unwrap().to_string()
}

#[test]
fn dockerfile_builds_and_runs_the_locklab_binary() {
    let d = read("Dockerfile");
    let lines: Vec<&str> = d
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let froms: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("FROM "))
        .collect();
    assert_eq!(froms.len(), 2, "a builder and a runtime stage: {froms:?}");
    assert!(froms[0].starts_with("FROM rust:") && froms[0].ends_with(" AS build"));
    assert!(froms[1].starts_with("FROM debian:") && froms[1].contains("-slim"));

    // The builder's toolchain is at least the workspace's rust-version.
    let manifest = read("Cargo.toml");
    let want = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("rust-version")
        .trim_matches('"');
    let tag = froms[0]["FROM rust:".len()..].split('-').next().unwrap();
    let ver = |s: &str| -> Vec<u32> { s.split('.').map(|x| x.parse().unwrap()).collect() };
    assert!(
        ver(tag) >= ver(want),
        "rust:{tag} is older than rust-version {want}"
    );

    // Every COPY from the context exists, and every workspace member and
    // the root crate's sources are copied.
    let mut copied = Vec::new();
    for l in &lines {
        if let Some(rest) = l.strip_prefix("COPY ")
            && !rest.starts_with("--from")
        {
            let parts: Vec<&str> = rest.split_whitespace().collect();
            for src in &parts[..parts.len() - 1] {
                assert!(repo().join(src).exists(), "COPY {src}: no such path");
                copied.push(src.to_string());
            }
        }
    }
    let members = manifest
        .lines()
        .find_map(|l| l.strip_prefix("members = "))
        .expect("workspace members");
    for m in members.trim_matches(['[', ']']).split(',') {
        let m = m.trim().trim_matches('"');
        assert!(
            copied.iter().any(|c| c == m),
            "workspace member {m} is not copied"
        );
    }
    for needed in ["Cargo.toml", "Cargo.lock", "src"] {
        assert!(copied.iter().any(|c| c == needed), "{needed} is not copied");
    }

    // Files compiled in with include_str! lie inside what is copied.
    for dir in &copied {
        let root = repo().join(dir);
        if root.is_dir() {
            for f in rust_files(&root) {
                let text = std::fs::read_to_string(&f).unwrap();
                for inc in text.split("include_str!(\"").skip(1) {
                    let rel = inc.split('"').next().unwrap();
                    let target = f.parent().unwrap().join(rel);
                    assert!(target.exists(), "{}: {rel} missing", f.display());
                    let target = target.canonicalize().unwrap();
                    assert!(
                        copied
                            .iter()
                            .any(|c| target.starts_with(repo().join(c).canonicalize().unwrap())),
                        "{} includes {rel}, which the Dockerfile does not copy",
                        f.display()
                    );
                }
            }
        }
    }

    // The binary built is the binary copied, on PATH, and the entrypoint.
    let bin = Path::new(env!("CARGO_BIN_EXE_locklab"))
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("RUN cargo build --release --locked")
                && l.contains(&format!("--bin {bin}"))),
        "the builder builds --bin {bin}"
    );
    let workdir = lines
        .iter()
        .find_map(|l| l.strip_prefix("WORKDIR "))
        .expect("the builder's WORKDIR");
    assert!(
        lines.contains(
            &format!("COPY --from=build {workdir}/target/release/{bin} /usr/local/bin/{bin}")
                .as_str()
        ),
        "the runtime stage copies the built {bin} onto PATH"
    );
    assert!(lines.contains(&format!("ENTRYPOINT [\"{bin}\"]").as_str()));

    // The build context leaves out target/, and nothing that is copied.
    let ignore = read(".dockerignore");
    let ignored: Vec<&str> = ignore
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(ignored.contains(&"target"));
    for c in &copied {
        assert!(!ignored.contains(&c.as_str()), "{c} is copied but ignored");
    }

    // The tag is the crate's version, and the recipes run that image.
    assert_eq!(
        image_tag(),
        format!("locklab:{}", env!("CARGO_PKG_VERSION"))
    );
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// Runs `bash SCRIPT` in `cwd` with `env`, the built locklab first on PATH.
fn bash(script: &Path, cwd: &Path, env: &[(&str, String)], path: &[&Path]) -> (i32, String) {
    let o = Command::new("bash")
        .arg(script)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("PATH", path_with(path))
        .output()
        .expect("bash runs");
    (
        o.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// The exit code of `locklab simulate watchdog --runs RUNS --seed 1` on one machine.
fn one_machine(runs: &str) -> i32 {
    common::locklab(&["simulate", "watchdog", "--runs", runs, "--seed", "1"])
        .status
        .code()
        .unwrap()
}

#[test]
fn slurm_recipe_runs_locally() {
    let dir = scratch("slurm");
    let slurm = repo().join("deploy/slurm");
    let bin = bin_dir();
    // The array's size is the shard count.
    let shards = read("deploy/slurm/shards.sh");
    assert!(shards.contains("#SBATCH --array=0-15") && shards.contains("N=${N:-16}"));

    // submit.sh, with an sbatch that records what it is asked.
    let fake = dir.join("fake-bin");
    std::fs::create_dir_all(&fake).unwrap();
    let sbatch = fake.join("sbatch");
    std::fs::write(&sbatch, "#!/bin/sh\necho \"$@\" >> sbatch.log\necho 4242\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&sbatch, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (code, out) = bash(&slurm.join("submit.sh"), &dir, &[], &[&fake, &bin]);
    assert_eq!(code, 0, "{out}");
    assert!(
        dir.join("logs").is_dir() && dir.join("out").is_dir(),
        "submit creates logs/ and out/"
    );
    let log = std::fs::read_to_string(dir.join("sbatch.log")).unwrap();
    assert!(
        log.contains("--parsable") && log.contains("shards.sh"),
        "{log}"
    );
    assert!(
        log.contains("--dependency=afterok:4242") && log.contains("merge.sh"),
        "{log}"
    );

    // The array's tasks, then the merge, as Slurm would run them (3 shards).
    let runs = "300";
    for i in 0..3 {
        let env = [
            ("SLURM_ARRAY_TASK_ID", i.to_string()),
            ("SLURM_CPUS_PER_TASK", "1".into()),
            ("N", "3".into()),
            ("RUNS", runs.into()),
        ];
        let (code, out) = bash(&slurm.join("shards.sh"), &dir, &env, &[&bin]);
        assert_eq!(code, 0, "shard {i}: {out}");
        assert!(
            dir.join(format!("out/shard-{i}.json")).is_file(),
            "shard {i}"
        );
    }
    let (code, out) = bash(&slurm.join("merge.sh"), &dir, &[], &[&bin]);
    assert_eq!(code, 0, "merge: {out}");
    let result = std::fs::read_to_string(dir.join("out/result.txt")).unwrap();
    assert!(result.contains("watchdog"), "{result}");
    let rc: i32 = std::fs::read_to_string(dir.join("out/merge-exit-code"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        rc,
        one_machine(runs),
        "the merge's verdict is one machine's"
    );

    // A task given bad input fails with simulate's exit 2 and leaves no file.
    let env = [
        ("SLURM_ARRAY_TASK_ID", "7".to_string()),
        ("N", "3".into()),
        ("RUNS", runs.into()),
    ];
    let (code, out) = bash(&slurm.join("shards.sh"), &dir, &env, &[&bin]);
    assert_eq!(code, 2, "{out}");
    assert!(!dir.join("out/shard-7.json").exists() && !dir.join("out/shard-7.json.part").exists());
}

/// The shell script of a container's `args: - |` block in a Job manifest.
fn container_script(yaml: &str) -> String {
    let lines: Vec<&str> = yaml.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == "- |")
        .expect("an args block")
        + 1;
    let indent = lines[start].len() - lines[start].trim_start().len();
    lines[start..]
        .iter()
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn kubernetes_recipe_is_consistent_and_its_commands_run() {
    let volume = read("deploy/k8s/volume.yaml");
    let shards = read("deploy/k8s/shards.yaml");
    let merge = read("deploy/k8s/merge.yaml");
    let image = format!("image: {}", image_tag());
    for (name, y) in [("shards", &shards), ("merge", &merge)] {
        assert!(
            y.contains(&image),
            "{name}: runs the Dockerfile's image ({image})"
        );
        assert!(y.contains("claimName: locklab-out"), "{name}");
        assert!(
            y.contains("restartPolicy: Never"),
            "{name}: podFailurePolicy needs it"
        );
        assert!(y.contains("podFailurePolicy:"), "{name}");
        assert!(
            y.contains("action: FailJob") && y.contains("values: [2]"),
            "{name}: bad input (exit 2) fails the Job without retries"
        );
    }
    assert!(volume.contains("name: locklab-out") && volume.contains("ReadWriteMany"));
    assert!(shards.contains("completionMode: Indexed"));
    assert!(shards.contains("completions: 16") && shards.contains("parallelism: 16"));
    assert!(shards.contains("$JOB_COMPLETION_INDEX/16"));

    // Run both scripts locally, /out being a scratch directory and the run
    // count cut from 10,000,000 to 320.
    let dir = scratch("k8s");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let local = |s: String| {
        s.replace("/out", out.to_str().unwrap())
            .replace("--runs 10000000", "--runs 320")
    };
    let shard_script = local(container_script(&shards));
    let merge_script = local(container_script(&merge));
    assert!(shard_script.contains("--runs 320"));
    let sh = |script: &str, index: Option<usize>| {
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg(script)
            .env("PATH", path_with(&[&bin_dir()]));
        if let Some(i) = index {
            c.env("JOB_COMPLETION_INDEX", i.to_string());
        }
        let o = c.output().expect("sh runs");
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    for i in 0..16 {
        let (code, err) = sh(&shard_script, Some(i));
        assert_eq!(code, 0, "pod {i}: {err}");
        assert!(out.join(format!("shard-{i}.json")).is_file());
    }
    let (code, err) = sh(&merge_script, None);
    assert_eq!(
        code, 0,
        "the merge pod succeeds whatever the verdict: {err}"
    );
    let rc: i32 = std::fs::read_to_string(out.join("merge-exit-code"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(rc, one_machine("320"));

    // With a shard missing the merge is bad input: the pod fails with 2,
    // which the podFailurePolicy turns into a failed Job, not a retry.
    std::fs::remove_file(out.join("shard-3.json")).unwrap();
    let (code, err) = sh(&merge_script, None);
    assert_eq!(code, 2, "{err}");
}

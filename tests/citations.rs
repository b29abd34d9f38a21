//! Citations of docs/semantics.md resolve: every `semantics.md §N` or
//! `semantics.md P<n>` in the repository's code and Markdown names a section
//! or pitfall the file has, and every Markdown link into it names a heading.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The section number a heading gives: `## 2. Redlock` → `2`,
/// `### 2.1 The algorithm` → `2.1`, `#### P14. ...` → `P14`.
fn section(line: &str) -> Option<String> {
    let title = line.strip_prefix('#')?.trim_start_matches('#').trim_start();
    let label = title.split([' ', '.']).next()?;
    let number = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if label.strip_prefix('P').is_some_and(number) {
        return Some(label.to_string());
    }
    let label = title.split(' ').next()?.trim_end_matches('.');
    label.split('.').all(number).then(|| label.to_string())
}

/// The anchor a heading gets on GitHub: lower case, punctuation dropped,
/// spaces as hyphens.
fn anchor(line: &str) -> String {
    line.trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The labels cited right after one `semantics.md`: `§5, §6` → `5`, `6`;
/// `§7.2 P1` → `7.2`, `P1`. A placeholder (`§N`) is no citation.
fn cited(after: &str) -> Vec<String> {
    let end = after.find([')', ']', ':', ';']).unwrap_or(after.len());
    let mut labels = Vec::new();
    for token in after[..end].split([' ', ',']).filter(|t| !t.is_empty()) {
        let token = token.trim_end_matches(['.', '`']);
        let label = token.strip_prefix('§').unwrap_or(token);
        let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
        let section = label.split('.').all(digits);
        let pitfall = label.strip_prefix('P').is_some_and(digits);
        if !(section || pitfall) {
            break;
        }
        labels.push(label.to_string());
    }
    labels
}

#[test]
fn every_semantics_citation_names_a_section_it_has() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/semantics.md")).expect("docs/semantics.md");
    let headings: Vec<&str> = doc.lines().filter(|l| l.starts_with('#')).collect();
    let sections: BTreeSet<String> = headings.iter().filter_map(|l| section(l)).collect();
    let anchors: BTreeSet<String> = headings.iter().map(|l| anchor(l)).collect();
    for s in [
        "1", "1.3", "2", "2.2", "5", "6", "7.2", "8", "9", "P1", "P14", "P15",
    ] {
        assert!(sections.contains(s), "docs/semantics.md has no §{s}");
    }

    let listed = Command::new("git")
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .current_dir(root)
        .output()
        .expect("git ls-files (the test reads the repository's files)");
    assert!(listed.status.success(), "git ls-files failed");
    let mut checked = 0;
    for file in String::from_utf8_lossy(&listed.stdout).lines() {
        if !(file.ends_with(".rs") || file.ends_with(".md")) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for (i, _) in line.match_indices("semantics.md") {
                let after = &line[i + "semantics.md".len()..];
                if let Some(link) = after.strip_prefix('#') {
                    let frag = &link[..link.find(')').unwrap_or(link.len())];
                    assert!(
                        anchors.contains(frag),
                        "{file}:{}: no heading in docs/semantics.md has the anchor #{frag}",
                        n + 1
                    );
                }
                for label in cited(after) {
                    assert!(
                        sections.contains(&label),
                        "{file}:{}: docs/semantics.md has no section {label}",
                        n + 1
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} citations found");
}

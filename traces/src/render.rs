//! Every way a trace can be drawn, behind one switch, so that each command
//! that shows traces (`check`, `trace render`, `simulate`, `docs`) offers
//! the same formats and draws them the same way.

use crate::format::Trace;
use crate::{dot, html, itf, mermaid, narrate, sequence, svg, text};

/// A rendering of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Lanes in the terminal, then the story.
    Text,
    /// One row per step with the state after it, then the story.
    Table,
    /// Markdown: the story and a Mermaid sequence diagram.
    Mermaid,
    /// A standalone SVG picture.
    Svg,
    /// A narrow SVG with large text, readable where a code host scales
    /// images to its page width.
    SvgEmbed,
    /// A self-contained HTML viewer.
    Html,
    /// The happens-before graph in Graphviz DOT.
    Dot,
    /// The story alone.
    Story,
    /// The trace file itself.
    Json,
    /// The Informal Trace Format of Apalache and Quint.
    Itf,
}

impl Format {
    /// The format's name, as `--format` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Table => "table",
            Format::Mermaid => "mermaid",
            Format::Svg => "svg",
            Format::SvgEmbed => "svg-embed",
            Format::Html => "html",
            Format::Dot => "dot",
            Format::Story => "story",
            Format::Json => "json",
            Format::Itf => "itf",
        }
    }

    /// The file extension for documents of this format.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Text | Format::Table | Format::Story => "txt",
            Format::Mermaid => "md",
            Format::Svg => "svg",
            Format::SvgEmbed => "embed.svg",
            Format::Html => "html",
            Format::Dot => "dot",
            Format::Json => "json",
            Format::Itf => "itf.json",
        }
    }

    /// Whether several documents of this format can follow one another in
    /// one output and still be read (Markdown sections, DOT graphs, text);
    /// an SVG or HTML file holds exactly one.
    pub fn concatenates(self) -> bool {
        !matches!(
            self,
            Format::Svg | Format::SvgEmbed | Format::Html | Format::Json | Format::Itf
        )
    }

    /// Draws `t`. `color` adds ANSI colour to the terminal formats; pass it
    /// only when writing to a terminal.
    pub fn render(self, t: &Trace, color: bool) -> String {
        match self {
            Format::Text => sequence::render(t, color),
            Format::Table => {
                let mut out = text::render(t, color);
                out.push('\n');
                out.push_str(&narrate::section(t, color));
                out
            }
            Format::Mermaid => mermaid::render(t),
            Format::Svg => svg::render(t),
            Format::SvgEmbed => svg::embed::render(t),
            Format::Html => html::render(t),
            Format::Dot => dot::render(t),
            Format::Story => narrate::render(t),
            Format::Json => t.to_json(),
            Format::Itf => itf::render(t),
        }
    }
}

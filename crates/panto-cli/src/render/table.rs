//! Markdown tables laid out to the terminal's width.
//!
//! Columns take their natural width when the table fits. When it does not, the widest columns
//! give up room first, down to their longest word (so words stay whole), and only then below it;
//! each cell is wrapped inside its column.

use pulldown_cmark::Alignment;

use super::wrap::{line_width, pad, push, width, wrap, Line, Span};

/// Between two columns.
const SEPARATOR: &str = " │ ";
/// Under the header, where a separator crosses it.
const CROSSING: &str = "─┼─";
/// No column is made narrower than this (unless the text in it is).
const NARROWEST: usize = 3;
/// The style of the rules.
const RULE: &str = "2";

/// A table's rows of cells; the first `header_rows` rows are the header.
#[derive(Debug, Default)]
pub struct Table {
    /// Each column's alignment.
    pub alignments: Vec<Alignment>,
    /// Rows of cells, each cell its spans.
    pub rows: Vec<Vec<Line>>,
    /// How many leading rows are the header.
    pub header_rows: usize,
}

/// The widest word of a cell.
fn longest_word(cell: &[Span]) -> usize {
    cell.iter()
        .flat_map(|s| s.text.split(' '))
        .map(width)
        .max()
        .unwrap_or(0)
}

/// Column widths that fit in `columns`, as described in the module documentation.
fn widths(table: &Table, columns: usize) -> Vec<usize> {
    let count = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut natural = vec![0; count];
    let mut words = vec![0; count];
    for row in &table.rows {
        for (i, cell) in row.iter().enumerate() {
            natural[i] = natural[i].max(line_width(cell));
            words[i] = words[i].max(longest_word(cell));
        }
    }
    let budget = columns.saturating_sub(width(SEPARATOR) * count.saturating_sub(1));
    let mut chosen = natural.clone();
    // First give up the room words do not need, then the rest.
    for floor in [&words, &vec![NARROWEST; count]] {
        while chosen.iter().sum::<usize>() > budget {
            let widest = (0..count)
                .filter(|&i| chosen[i] > floor[i].max(NARROWEST).min(natural[i]))
                .max_by_key(|&i| chosen[i]);
            match widest {
                Some(i) => chosen[i] -= 1,
                None => break,
            }
        }
    }
    chosen
}

/// The table's lines, at most `columns` wide where that is possible.
pub fn render(table: &Table, columns: usize) -> Vec<Line> {
    let widths = widths(table, columns);
    let mut out = Vec::new();
    for (r, row) in table.rows.iter().enumerate() {
        let header = r < table.header_rows;
        let cells: Vec<Vec<Line>> = widths
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                let mut cell = row.get(i).cloned().unwrap_or_default();
                if header {
                    for span in &mut cell {
                        span.sgr = if span.sgr.is_empty() {
                            "1".into()
                        } else {
                            format!("{};1", span.sgr)
                        };
                    }
                }
                wrap(&cell, w)
            })
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for l in 0..height {
            let mut line = Line::new();
            for (i, &w) in widths.iter().enumerate() {
                if i > 0 {
                    push(&mut line, SEPARATOR, RULE);
                }
                let part = cells[i].get(l).cloned().unwrap_or_default();
                let room = w.saturating_sub(line_width(&part));
                let (before, after) = match table.alignments.get(i) {
                    Some(Alignment::Right) => (room, 0),
                    Some(Alignment::Center) => (room / 2, room - room / 2),
                    _ => (0, room),
                };
                line.push(Span::plain(" ".repeat(before)));
                line.extend(part);
                // The last column is not padded: no trailing spaces.
                if i + 1 < widths.len() {
                    let full = line_width(&line) + after;
                    line = pad(line, full);
                }
            }
            line.retain(|s| !s.text.is_empty());
            out.push(line);
        }
        if header && r + 1 == table.header_rows {
            let rule: Vec<String> = widths.iter().map(|&w| "─".repeat(w)).collect();
            out.push(vec![Span::styled(rule.join(CROSSING), RULE)]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::wrap::line_text;

    fn table(rows: &[&[&str]]) -> Table {
        Table {
            alignments: vec![Alignment::None; rows[0].len()],
            rows: rows
                .iter()
                .map(|r| r.iter().map(|c| vec![Span::plain(*c)]).collect())
                .collect(),
            header_rows: 1,
        }
    }

    #[test]
    fn a_table_that_fits_is_aligned() {
        let t = table(&[&["name", "size"], &["panto-core", "big"]]);
        let lines: Vec<String> = render(&t, 80).iter().map(|l| line_text(l)).collect();
        assert_eq!(lines, ["name       │ size", "───────────┼─────", "panto-core │ big"]);
    }

    #[test]
    fn a_wide_table_wraps_cells_at_words() {
        let t = table(&[
            &["crate", "what it does"],
            &["panto-core", "the engine, the providers and the agent loop"],
        ]);
        let lines: Vec<String> = render(&t, 30).iter().map(|l| line_text(l)).collect();
        for line in &lines {
            assert!(width(line) <= 30, "{line:?} in {lines:#?}");
        }
        assert_eq!(lines[2], "panto-core │ the engine, the");
        assert_eq!(lines[3], "           │ providers and the");
    }
}

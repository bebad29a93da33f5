//! Where the step labels of a timeline go: each in one of the rows above the lanes, so that no
//! two labels of a row overlap (a label that finds no free row is moved right of the last one
//! in the least crowded row, and shortened to fit the chart).

/// Width of one label character at the timeline's 11 px font (an overestimate, so estimated
/// extents never undercount).
pub(super) const CHAR_W: f64 = 6.6;
/// Space kept between two labels of a row.
const GAP: f64 = 8.0;

/// One placed label: its row, where its text starts (anchored at its start), and its text.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Placed {
    pub(super) row: usize,
    pub(super) x: f64,
    pub(super) text: String,
}

/// Places labels `(tick x, text)` in time order into `rows` rows within `[0, right]`.
pub(super) fn place(ticks: &[(f64, String)], rows: usize, right: f64) -> Vec<Placed> {
    let mut ends = vec![f64::NEG_INFINITY; rows.max(1)];
    let mut placed = Vec::with_capacity(ticks.len());
    for (x, text) in ticks {
        let chars = text.chars().count();
        let width = chars as f64 * CHAR_W;
        // Right of its tick, or ending at it when that would run off the chart.
        let natural = if x + 3.0 + width > right {
            (x - 3.0 - width).max(0.0)
        } else {
            x + 3.0
        };
        let (row, start) = match ends.iter().position(|end| *end + GAP <= natural) {
            Some(row) => (row, natural),
            None => {
                let (row, end) = ends
                    .iter()
                    .copied()
                    .enumerate()
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .unwrap_or((0, 0.0));
                (row, end + GAP)
            }
        };
        let room = ((right - start) / CHAR_W).floor().max(1.0) as usize;
        let text = if chars > room {
            let mut t: String = text.chars().take(room.saturating_sub(1)).collect();
            t.push('…');
            t
        } else {
            text.clone()
        };
        ends[row] = start + text.chars().count() as f64 * CHAR_W;
        placed.push(Placed {
            row,
            x: start,
            text,
        });
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_of_a_row_never_overlap() {
        // Ten steps within a few pixels of each other: more than the rows can take side by side.
        let ticks: Vec<(f64, String)> = (0..10)
            .map(|i| {
                (
                    200.0 + f64::from(i) * 4.0,
                    format!("step number {i} of the scenario"),
                )
            })
            .collect();
        let placed = place(&ticks, 3, 940.0);
        for a in &placed {
            let a_end = a.x + a.text.chars().count() as f64 * CHAR_W;
            assert!(a_end <= 940.0 + 0.01, "{a:?}");
            for b in placed.iter().filter(|b| b.row == a.row && b.x > a.x) {
                assert!(a_end + GAP <= b.x + 0.01, "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn spread_labels_keep_their_place() {
        let placed = place(&[(100.0, "a".into()), (500.0, "b".into())], 3, 940.0);
        assert_eq!(
            placed[0],
            Placed {
                row: 0,
                x: 103.0,
                text: "a".into()
            }
        );
        assert_eq!(placed[1].row, 0);
        assert_eq!(placed[1].x, 503.0);
    }
}

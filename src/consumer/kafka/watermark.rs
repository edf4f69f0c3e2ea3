//! Which offset of each partition may be committed: messages of one partition are recorded
//! concurrently, so they settle out of order, and the group may only learn of an offset once every
//! message before it is settled (recorded, replayed or dead-lettered). The committed offset is the
//! next one to read: the lowest still in flight, or one past the last taken when none is.

use std::collections::{BTreeSet, HashMap};

/// One partition of one topic.
pub type TopicPartition = (String, i32);

#[derive(Default)]
struct Partition {
    in_flight: BTreeSet<i64>,
    /// One past the highest offset taken.
    next: i64,
    /// The last offset handed out to be committed.
    stored: Option<i64>,
}

impl Partition {
    fn committable(&self) -> i64 {
        self.in_flight.first().copied().unwrap_or(self.next)
    }
}

/// The offsets in flight of every partition this consumer holds.
#[derive(Default)]
pub struct Watermarks {
    partitions: HashMap<TopicPartition, Partition>,
}

impl Watermarks {
    /// A message was taken from the broker (in the partition's order).
    pub fn take(&mut self, partition: TopicPartition, offset: i64) {
        let state = self.partitions.entry(partition).or_insert_with(|| Partition {
            // Where the group's commit stands: the first offset read.
            stored: Some(offset),
            ..Partition::default()
        });
        state.in_flight.insert(offset);
        state.next = state.next.max(offset + 1);
    }

    /// A message is settled: the offset to commit now, when it moved.
    pub fn settle(&mut self, partition: &TopicPartition, offset: i64) -> Option<i64> {
        let state = self.partitions.get_mut(partition)?;
        if !state.in_flight.remove(&offset) {
            return None;
        }
        let committable = state.committable();
        (state.stored < Some(committable)).then(|| {
            state.stored = Some(committable);
            committable
        })
    }

    /// The group took the partition away: what is still in flight there will be read again by
    /// whoever holds it next (a replay when it was recorded meanwhile).
    pub fn forget(&mut self, partition: &TopicPartition) {
        self.partitions.remove(partition);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: i32) -> TopicPartition {
        ("edi".to_owned(), n)
    }

    #[test]
    fn the_commit_never_passes_a_message_in_flight() {
        let mut marks = Watermarks::default();
        for offset in 10..14 {
            marks.take(p(0), offset);
        }
        marks.take(p(1), 3);
        assert_eq!(marks.settle(&p(0), 12), None, "11 and 10 are still in flight");
        assert_eq!(marks.settle(&p(0), 11), None);
        assert_eq!(marks.settle(&p(1), 3), Some(4), "partitions are apart");
        assert_eq!(marks.settle(&p(0), 10), Some(13), "13 is the next to read: it is in flight");
        assert_eq!(marks.settle(&p(0), 10), None, "settled once");
        assert_eq!(marks.settle(&p(0), 13), Some(14));
        marks.take(p(0), 14);
        assert_eq!(marks.settle(&p(0), 14), Some(15));
    }

    #[test]
    fn a_partition_taken_away_commits_nothing_more_until_it_comes_back() {
        let mut marks = Watermarks::default();
        marks.take(p(0), 5);
        marks.take(p(0), 6);
        marks.forget(&p(0));
        assert_eq!(marks.settle(&p(0), 5), None, "no longer ours");
        // Back from the committed offset 5: the message recorded meanwhile is read again.
        marks.take(p(0), 5);
        assert_eq!(marks.settle(&p(0), 6), None, "6 was in flight before, not now");
        assert_eq!(marks.settle(&p(0), 5), Some(6));
    }
}

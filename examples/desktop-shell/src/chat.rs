//! A stand-in for the shell's chat window: where published commits become messages, and a
//! branch's commits become alternative takes ("swipes") of the message its source published.

use std::collections::HashMap;

use tt_runtime::ChatCommitRequest;

/// Messages in order; a run's first commit adds a message, its later commits change it.
#[derive(Debug, Default)]
pub(crate) struct ChatWindow {
    messages: Vec<String>,
    /// Run id -> index of the message its commits write.
    message_of_run: HashMap<String, usize>,
    /// Message id -> the persistent state its run left (what the next run starts from).
    state_of_message: HashMap<String, String>,
    /// Index of a message -> its alternative takes, the first being the message's own.
    swipes: HashMap<usize, Vec<String>>,
    /// Branch run id -> (index of the message it is a take of, index of its take).
    take_of_run: HashMap<String, (usize, usize)>,
}

impl ChatWindow {
    /// Publishes a commit (`replace` or `append` the run's message) and returns the message id
    /// the runtime records for it.
    pub(crate) fn publish(&mut self, commit: &ChatCommitRequest) -> String {
        let run = commit.run_id.to_string();
        if let Some((index, take)) = self.take_of_run.get(&run).copied() {
            let takes = self
                .swipes
                .entry(index)
                .or_insert_with(|| vec![self.messages[index].clone()]);
            let text = &mut takes[take];
            if commit.mode == "append" {
                text.push_str(&commit.content);
            } else {
                *text = commit.content.clone();
            }
            return format!("{}.{}", index + 1, take + 1);
        }
        let index = match self.message_of_run.get(&run) {
            Some(index) => *index,
            None => {
                self.messages.push(String::new());
                let index = self.messages.len() - 1;
                self.message_of_run.insert(run, index);
                index
            }
        };
        let message = &mut self.messages[index];
        if commit.mode == "append" {
            message.push_str(&commit.content);
        } else {
            *message = commit.content.clone();
        }
        (index + 1).to_string()
    }

    /// Makes what run `branch` publishes another take of the message run `source` published
    /// (a branch of `source` from before that message, docs/branching.md).
    pub(crate) fn add_take(&mut self, source: &str, branch: &str) {
        let Some(index) = self.message_of_run.get(source).copied() else {
            return;
        };
        let takes = self
            .swipes
            .entry(index)
            .or_insert_with(|| vec![self.messages[index].clone()]);
        takes.push(String::new());
        let take = takes.len() - 1;
        self.take_of_run.insert(branch.to_owned(), (index, take));
    }

    /// The takes of message `message_id` (1 = the first message), its own first.
    pub(crate) fn takes(&self, message_id: &str) -> Vec<String> {
        let Some(index) = message_id
            .parse::<usize>()
            .ok()
            .and_then(|id| id.checked_sub(1))
        else {
            return Vec::new();
        };
        self.swipes
            .get(&index)
            .cloned()
            .or_else(|| self.messages.get(index).cloned().map(|text| vec![text]))
            .unwrap_or_default()
    }

    /// Binds a finished run's persistent state to the message it published, so a later run of
    /// this conversation can start from it.
    pub(crate) fn bind_state(&mut self, message_id: &str, state_id: &str) {
        self.state_of_message
            .insert(message_id.to_owned(), state_id.to_owned());
    }

    /// The persistent state bound to a message, if any.
    pub(crate) fn state_of(&self, message_id: &str) -> Option<&str> {
        self.state_of_message.get(message_id).map(String::as_str)
    }

    /// The messages, oldest first.
    pub(crate) fn messages(&self) -> &[String] {
        &self.messages
    }
}

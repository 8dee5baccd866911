//! Work handed to one helper thread by a caller that may take it back: a queue of jobs, the
//! results, and whether the helper is on a job. Used where the caller has other work first and
//! would otherwise wait on the helper (`--all`'s parse ahead, its NDJSON writer).
//!
//! Why not a channel: a job sent through one is the helper's even before it runs, so a caller
//! that runs out of its own work must wait for a helper the scheduler may not have run yet (on
//! two cores, while a third thread has the other). Here the caller takes back what the helper
//! has not started ([`Handoff::take_unstarted`]) and does it itself, and waits only for the job
//! the helper is on ([`Handoff::wait_idle`]).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

/// The queue between a caller and its helper thread, which runs [`Handoff::serve`].
pub struct Handoff<J, R> {
    state: Mutex<State<J, R>>,
    changed: Condvar,
}

struct State<J, R> {
    /// Jobs the helper has not started, oldest first.
    jobs: VecDeque<J>,
    /// The helper is on a job.
    busy: bool,
    /// Results of the jobs the helper did, oldest first, not yet taken.
    done: Vec<R>,
    /// The helper stopped halfway through a job (it panicked); reported once.
    failed: bool,
    /// No more jobs come: the helper ends.
    closed: bool,
}

/// The helper stopped halfway through a job: it panicked, and its thread's join gives the panic.
#[derive(Debug, PartialEq, Eq)]
pub struct HelperFailed;

impl<J, R> Default for Handoff<J, R> {
    fn default() -> Self {
        Handoff {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                busy: false,
                done: Vec::new(),
                failed: false,
                closed: false,
            }),
            changed: Condvar::new(),
        }
    }
}

impl<J, R> Handoff<J, R> {
    fn lock(&self) -> MutexGuard<'_, State<J, R>> {
        // Nothing that can panic runs while the lock is held, so a poisoned lock holds a whole
        // state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait<'a>(&self, state: MutexGuard<'a, State<J, R>>) -> MutexGuard<'a, State<J, R>> {
        self.changed.wait(state).unwrap_or_else(|p| p.into_inner())
    }

    /// The helper thread's loop: does each job with `work`, oldest first, until
    /// [`Handoff::close`].
    pub fn serve(&self, mut work: impl FnMut(J) -> R) {
        loop {
            let job = {
                let mut state = self.lock();
                loop {
                    if state.closed {
                        return;
                    }
                    if let Some(job) = state.jobs.pop_front() {
                        state.busy = true;
                        break job;
                    }
                    state = self.wait(state);
                }
            };
            // Should the job panic, a caller waiting for it hears that it failed.
            let failed = FailOnUnwind(self);
            let result = work(job);
            std::mem::forget(failed);
            let mut state = self.lock();
            state.done.push(result);
            state.busy = false;
            self.changed.notify_all();
        }
    }

    /// Hands jobs to the helper.
    pub fn push(&self, jobs: impl IntoIterator<Item = J>) {
        self.lock().jobs.extend(jobs);
        self.changed.notify_all();
    }

    /// The jobs the helper has not started, taken back, oldest first.
    pub fn take_unstarted(&self) -> Vec<J> {
        self.lock().jobs.drain(..).collect()
    }

    /// The results ready now, oldest first.
    pub fn take_done(&self) -> Vec<R> {
        std::mem::take(&mut self.lock().done)
    }

    /// Waits until the helper is on no job, then takes the results, oldest first. Jobs still
    /// queued are not waited for: take them back first ([`Handoff::take_unstarted`]).
    pub fn wait_idle(&self) -> Result<Vec<R>, HelperFailed> {
        let mut state = self.lock();
        while state.busy {
            state = self.wait(state);
        }
        if std::mem::take(&mut state.failed) {
            return Err(HelperFailed);
        }
        Ok(std::mem::take(&mut state.done))
    }

    /// No more jobs: the helper ends once it is done with the one it is on; the jobs not
    /// started are dropped.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.jobs.clear();
        self.changed.notify_all();
    }
}

/// Marks the helper failed if it unwinds while it holds a job.
struct FailOnUnwind<'a, J, R>(&'a Handoff<J, R>);

impl<J, R> Drop for FailOnUnwind<'_, J, R> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.busy = false;
        state.failed = true;
        self.0.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A real helper thread: the jobs done in order, their results taken after waits.
    #[test]
    fn a_helper_does_the_jobs_in_order() {
        let handoff: Arc<Handoff<u32, u32>> = Arc::default();
        let serving = handoff.clone();
        let helper = std::thread::spawn(move || serving.serve(|n| n * 10));
        handoff.push([1, 2, 3]);
        let mut results = Vec::new();
        while results.len() < 3 {
            // A wait returns at once while the helper has not started.
            results.extend(handoff.wait_idle().unwrap());
            std::thread::yield_now();
        }
        assert_eq!(results, [10, 20, 30]);
        handoff.close();
        helper.join().unwrap();
        assert_eq!(handoff.take_done(), Vec::<u32>::new());
    }

    /// With no helper running, every job is still there to take back, and a wait returns at
    /// once; a helper that panicked halfway is reported once.
    #[test]
    fn unstarted_jobs_come_back_and_a_failed_helper_is_heard_once() {
        let handoff: Handoff<&str, ()> = Handoff::default();
        handoff.push(["a", "b"]);
        assert_eq!(handoff.wait_idle(), Ok(vec![]));
        assert_eq!(handoff.take_unstarted(), ["a", "b"]);

        let handoff: Arc<Handoff<u32, u32>> = Arc::default();
        let serving = handoff.clone();
        let helper = std::thread::spawn(move || serving.serve(|_| panic!("a bad job")));
        handoff.push([7]);
        loop {
            match handoff.wait_idle() {
                Err(HelperFailed) => break,
                Ok(done) => assert!(done.is_empty()),
            }
            std::thread::yield_now();
        }
        assert_eq!(handoff.wait_idle(), Ok(vec![]), "the failure is heard once");
        assert!(helper.join().is_err());
    }
}

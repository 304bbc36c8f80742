//! `--idle-only`: sample the machine's load when due, and pause (checkpointing and handing
//! back running units) or resume work accordingly (see [`crate::idle`]).

use std::time::Instant;

use super::Agent;
use crate::coordinator::Coordinator;
use crate::idle;

impl<C: Coordinator> Agent<C> {
    pub(super) fn watch_load(&mut self) {
        let Some((monitor, next)) = &mut self.idle else {
            return;
        };
        let now = Instant::now();
        if now < *next {
            return;
        }
        *next = now + idle::SAMPLE_EVERY;
        let Some(busy) = idle::machine_busy_seconds() else {
            return;
        };
        let may_run = monitor.sample(now, busy, crate::cpu::process_seconds());
        if may_run && self.paused {
            tracing::info!("the machine is idle: resuming work");
            self.paused = false;
        } else if !may_run && !self.paused {
            tracing::info!("the machine is busy: handing work back until it is idle");
            self.paused = true;
            for unit in self.running.values() {
                unit.ctx.request_stop();
            }
            self.release_queued();
        }
    }
}

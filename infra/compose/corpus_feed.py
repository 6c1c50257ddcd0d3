"""The corpus built in the background of a run, its train tasks published chunk by chunk."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from infra.platform.topics import Topics


class CorpusFeed:
    """Builds the corpus of `config` on a thread and publishes each chunk's train tasks.

    A thread, not a process: the build spends its time waiting on the sandbox's worker
    processes, and the run's supervision loop only has to look at `error` now and then.
    `marker` is written once everything is published, so a resumed run does not publish twice;
    until then `<marker>.partial` counts the train tasks on the topic, and a build resumed after
    an interruption (the same tasks in the same order) skips that many.
    """

    def __init__(self, config, bootstrap: str, marker: Path, say, cache_dir: Path | None = None,
                 topics: Topics = Topics()):
        self.config, self.bootstrap, self.marker, self.say = config, bootstrap, marker, say
        self.cache_dir, self.topics = cache_dir, topics
        self.partial = marker.with_name(marker.name + ".partial")
        self.published = int(self.partial.read_text()) if self.partial.exists() else 0
        self._skip = self.published
        self.error: BaseException | None = None
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._build, name="corpus-feed", daemon=True)

    def start(self) -> "CorpusFeed":
        self._thread.start()
        return self

    def _publish(self, chunk: list[dict]) -> None:
        from producers.task_publisher import publish_tasks

        train = [t for t in chunk if t["split"] == "train"]
        skipped = min(self._skip, len(train))  # published by the interrupted build
        self._skip -= skipped
        train = train[skipped:]
        if train:
            publish_tasks(train, self.bootstrap, topics=self.topics, progress=False)
            if not self.published:
                self.say(f"first {len(train)} train tasks published after {time.monotonic() - self.started:.0f} s")
            self.published += len(train)
            self.partial.write_text(str(self.published))

    def _build(self) -> None:
        from producers.corpus import cached_build
        from producers.corpus.cache import DEFAULT_CACHE_DIR

        try:
            corpus = cached_build(self.config, cache_dir=self.cache_dir or DEFAULT_CACHE_DIR, progress=False,
                                  on_tasks=self._publish)
            self.marker.write_text(corpus.name)
            self.partial.unlink(missing_ok=True)
        except BaseException as exc:  # reported by the run's loop, which owns the exit
            self.error = exc

    def finish(self, say) -> None:
        """Wait for the rest of the build (it is cached for the next run); `error` says how it ended."""
        if self._thread.is_alive():
            say(f"finishing the corpus build ({self.published} train tasks so far; cached for the next run)")
            self._thread.join()
        if self.error is None:
            say(f"corpus built: {self.published} train tasks in {time.monotonic() - self.started:.0f} s")

// A second listener attached from a `seq` (`engine.subscribe`): the events it missed, or a
// snapshot of the session, then live events, without disturbing the first listener.

import { test } from "node:test";
import assert from "node:assert/strict";

import { Engine } from "coder-agent-engine";
import { startMock, text, workspace } from "./mock.mjs";

const deltas = (pieces) => ({
  kind: "stream",
  chunks: pieces.map((piece) => ({ type: "text", text: piece })),
});

/** Resolves once `events` holds a `state_changed` to idle after `count` of them. */
function idle(engine, count) {
  let seen = 0;
  return new Promise((resolve) => {
    const stop = engine.onEvent((event) => {
      if (event.type === "state_changed" && event.state === "idle" && ++seen === count) {
        stop();
        resolve();
      }
    });
  });
}

test("a second listener from a seq gets the events after it, then live events", async (t) => {
  const { url } = await startMock(t, [
    deltas(["one ", "two ", "three"]),
    deltas(["four ", "five"]),
  ]);
  const model = { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" };
  const engine = Engine.create({ workingDir: workspace(), model });
  t.after(() => engine.dispose());
  const first = [];
  engine.onEvent((event) => first.push(event));
  const turn = idle(engine, 1);
  engine.send(engine.rootConversation, "count");
  await turn;

  // From the whole message: what follows it, every event once, in order.
  const from = first.find((event) => event.type === "agent_message").seq;
  const second = [];
  const unsubscribe = engine.subscribe({ fromSeq: from }, (event) => second.push(event));
  await new Promise((resolve) => setTimeout(resolve, 100));
  const last = first.at(-1).seq;
  assert.deepEqual(
    second.map((event) => event.seq),
    Array.from({ length: last - from + 1 }, (_, i) => from + i),
  );
  assert.deepEqual(second, first.filter((event) => event.seq >= from));

  // Live events go on to both listeners, in order; the first sees nothing twice.
  const next = idle(engine, 1);
  engine.send(engine.rootConversation, "more");
  await next;
  await new Promise((resolve) => setTimeout(resolve, 100));
  const live = second.filter((event) => event.seq > last);
  assert.ok(live.length > 0);
  assert.equal(live[0].seq, last + 1);
  for (const [i, event] of second.entries()) {
    if (i > 0) assert.ok(event.seq > second[i - 1].seq, "seq increases");
  }
  const firstSeqs = first.map((event) => event.seq);
  assert.equal(new Set(firstSeqs).size, firstSeqs.length);
  assert.equal(second.at(-1).seq, first.at(-1).seq);
  const said = (events) =>
    events.filter((e) => e.type === "agent_message_delta" && e.seq > last).map((e) => e.delta);
  assert.equal(said(second).join(""), "four five");
  assert.equal(said(first).join(""), "four five");

  // Unsubscribed, it gets nothing more; a seq past the next event is refused by code.
  unsubscribe();
  const after = second.length;
  const third = idle(engine, 1);
  engine.send(engine.rootConversation, "again");
  await third;
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(second.length, after);
  assert.throws(
    () => engine.subscribe({ fromSeq: first.at(-1).seq + 2 }, () => {}),
    (err) => err.code === "invalid_params",
  );
  assert.throws(
    () => engine.subscribe({ fromSeq: -1 }, () => {}),
    (err) => err.code === "invalid_params",
  );
});

test("a listener from before a resume gets a snapshot of the session, then live events", async (t) => {
  const { url } = await startMock(t, [text("Saved."), text("Fresh."), text("Live.")]);
  const model = { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" };
  const dir = workspace();
  const saved = Engine.create({ workingDir: dir, model });
  const savedTurn = idle(saved, 1);
  saved.send(saved.rootConversation, "Remember 7");
  await savedTurn;
  const savedId = saved.sessionId;
  await saved.dispose();

  const engine = Engine.create({ workingDir: dir, model });
  t.after(() => engine.dispose());
  const turn = idle(engine, 1);
  engine.send(engine.rootConversation, "Hello");
  await turn;
  engine.resume(savedId);

  const snapshots = [];
  const events = [];
  engine.subscribe(
    { fromSeq: 0, onSnapshot: (snapshot) => snapshots.push(snapshot) },
    (event) => events.push(event),
  );
  const live = idle(engine, 1);
  engine.send(engine.rootConversation, "Which number?");
  await live;
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(snapshots.length, 1);
  const [snapshot] = snapshots;
  assert.equal(snapshot.sessionId, savedId);
  assert.equal(snapshot.state, "idle");
  assert.deepEqual(snapshot.permissionRequests, []);
  assert.deepEqual(snapshot.runningTools, []);
  assert.equal(snapshot.conversations.length, 1);
  assert.ok(snapshot.conversations[0].messages.some((m) => m.content === "Remember 7"));
  assert.equal(events[0].seq, snapshot.nextSeq, "live events follow the snapshot");
  assert.ok(events.some((e) => e.type === "agent_message" && e.message === "Live."));
});

/**
 * The search box against a user who types fast and slow and presses Enter at once or later: the list shown is always
 * the answer to the text in the box, and Enter or a click never takes an item the user did not see (or, pressed
 * before the list came, the first item of the answer to the text in the box). Answers arrive in any order: each is a
 * promise the test settles itself, so nothing depends on the machine's speed.
 */
import * as assert from 'assert';
import { SearchSession } from '../../../src/extension/searchSession';

interface Item {
  text: string;
  n: number;
}

/** A server whose answers the test releases, in any order. */
class Server {
  readonly pending: { text: string; release: () => void }[] = [];
  ask = (text: string): Promise<Item[]> => new Promise((resolve) => this.pending.push({ text, release: () => resolve([0, 1, 2].map((n) => ({ text, n }))) }));
  /** Releases the answers to `text` (all of them when undefined), in the order asked or reversed. */
  async release(text?: string, reversed = false): Promise<void> {
    const chosen = this.pending.filter((p) => text === undefined || p.text === text);
    for (const p of reversed ? [...chosen].reverse() : chosen) {
      this.pending.splice(this.pending.indexOf(p), 1);
      p.release();
    }
    await settle();
  }
}

/** Lets the session's pause (a timer set before this one, so due first whatever the load) and the promises run. */
const settle = async (): Promise<void> => {
  await new Promise((r) => setTimeout(r, 2));
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

/** `onScreen`: whether a list the session sets is on screen at once (false: the editor confirms it later). */
function harness(
  initial = '',
  onScreen = true,
): {
  server: Server;
  session: SearchSession<Item>;
  shown: () => { text: string; items: Item[] } | undefined;
  chosen: Item[];
  type: (text: string) => Promise<void>;
} {
  const server = new Server();
  let shown: { text: string; items: Item[] } | undefined;
  const chosen: Item[] = [];
  const session = new SearchSession<Item>(
    server.ask,
    {
      show: (text, items) => {
        shown = { text, items };
        return onScreen;
      },
      clear: () => (shown = undefined),
      busy: () => undefined,
      choose: (i) => chosen.push(i),
    },
    initial,
    0,
  );
  const type = async (text: string): Promise<void> => {
    session.typed(text);
    await settle();
  };
  return { server, session, shown: () => shown, chosen, type };
}

describe('the search box: what is shown and what Enter takes', () => {
  it('an answer to a shorter text that comes after the text changed is never shown', async () => {
    const h = harness();
    await h.type('squeeze');
    await h.type('squeeze excitation');
    await h.server.release('squeeze excitation');
    assert.strictEqual(h.shown()?.text, 'squeeze excitation');
    await h.server.release('squeeze');
    assert.strictEqual(h.shown()?.text, 'squeeze excitation', 'the late answer to the shorter text is dropped');
  });

  it('Enter pressed at once waits for the answer to the text in the box, whatever answers come first', async () => {
    const h = harness();
    await h.type('squeeze');
    await h.type('squeeze excitation');
    assert.strictEqual(h.session.accept(undefined), 'waiting');
    await h.server.release('squeeze');
    assert.deepStrictEqual(h.chosen, [], 'nothing taken from the answer to another text');
    await h.server.release('squeeze excitation');
    assert.deepStrictEqual(h.chosen, [{ text: 'squeeze excitation', n: 0 }]);
  });

  it('Enter after the list came takes the highlighted item; an item of a list no longer shown is not taken', async () => {
    const h = harness();
    await h.type('attention');
    await h.server.release();
    const stale = h.shown()!.items[2];
    assert.strictEqual(h.session.accept(h.shown()!.items[1]), 'chosen');
    assert.deepStrictEqual(h.chosen, [{ text: 'attention', n: 1 }]);
    await h.type('attention pool');
    assert.strictEqual(h.session.accept(stale), 'waiting', 'the list of the old text is gone: Enter waits');
    await h.server.release();
    assert.deepStrictEqual(h.chosen.at(-1), { text: 'attention pool', n: 0 });
    await h.type('conv');
    await h.server.release();
    assert.strictEqual(h.session.accept(stale), 'nothing', 'a click on an item not shown does nothing');
  });

  it('many rounds of fast and slow typing, Enter at once or later, answers in any order: every choice was shown or asked for', async () => {
    // a fixed pseudo-random sequence (the same every run)
    let state = 7;
    const next = (n: number): number => (state = (state * 1103515245 + 12345) % 2 ** 31) % n;
    const words = ['s', 'sq', 'squ', 'squeeze', 'squeeze ex', 'squeeze excitation', 'channel', 'channel attention'];
    for (let round = 0; round < 40; round++) {
      const h = harness();
      const typed = words.slice(0, 1 + next(words.length));
      for (const w of typed) {
        await h.type(w);
        // slow typing: some answers come between keystrokes
        if (next(3) === 0) await h.server.release(undefined, next(2) === 0);
      }
      const last = typed[typed.length - 1];
      const shownBefore = h.shown();
      assert.ok(!shownBefore || shownBefore.text === last, `round ${round}: shown ${shownBefore?.text} for ${last}`);
      const early = next(2) === 0;
      if (early) {
        const got = h.session.accept(shownBefore?.items[0]);
        assert.ok(got === 'waiting' || (got === 'chosen' && shownBefore), `round ${round}: ${got}`);
      }
      await h.server.release(undefined, next(2) === 0);
      assert.strictEqual(h.shown()?.text, last, `round ${round}: the box shows the answer to its text`);
      if (!early) h.session.accept(h.shown()!.items[1]);
      assert.strictEqual(h.chosen.length, 1, `round ${round}: one choice`);
      assert.strictEqual(h.chosen[0].text, last, `round ${round}: the choice answers the text in the box`);
      assert.strictEqual(h.chosen[0].n, early ? 0 : 1, `round ${round}: the highlighted item, or the first of the answer waited for`);
    }
  });

  it('Enter on a row of the list the editor still shows takes the first item of the new answer, not the row at that index', async () => {
    const h = harness('', false);
    await h.type('attention');
    await h.server.release();
    // the editor reports the highlighted row by its index: mapped onto the new answer before the editor shows it
    const sameIndex = h.shown()!.items[2];
    assert.strictEqual(h.session.accept(sameIndex), 'chosen');
    assert.deepStrictEqual(h.chosen, [{ text: 'attention', n: 0 }], 'the first item of the answer to the text in the box');
  });

  it('once the editor reports an active item of the current list, Enter takes the highlighted item', async () => {
    const h = harness('', false);
    await h.type('attention');
    await h.server.release();
    const items = h.shown()!.items;
    h.session.displayed([]);
    assert.strictEqual(h.session.accept(items[2]), 'chosen');
    assert.strictEqual(h.chosen.at(-1)?.n, 0, 'an empty active list says nothing of what is on screen');
    h.session.displayed([items[1]]);
    assert.strictEqual(h.session.accept(items[1]), 'chosen');
    assert.strictEqual(h.chosen.at(-1)?.n, 1);
    // an active report of another text's list does not confirm the next one
    await h.type('attention pool');
    h.session.displayed([items[1]]);
    await h.server.release();
    assert.strictEqual(h.session.accept(h.shown()!.items[2]), 'chosen');
    assert.deepStrictEqual(h.chosen.at(-1), { text: 'attention pool', n: 0 });
  });

  it('Enter with no row highlighted after the answer came (the editor still had the emptied list) takes the first item', async () => {
    const h = harness();
    await h.type('squeeze');
    await h.server.release();
    assert.strictEqual(h.session.accept(undefined), 'chosen');
    assert.deepStrictEqual(h.chosen, [{ text: 'squeeze', n: 0 }]);
  });
});

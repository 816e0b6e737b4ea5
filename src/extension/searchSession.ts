/**
 * What the search box shows and what Enter does, kept apart from VS Code so that a test can type and press Enter at
 * any pace. Every change of the text is a new sequence number: an answer to any older text is dropped, so the list
 * never shows results of a text that is no longer in the box. Enter (or a click) acts on an item of the list shown
 * for the text in the box; pressed before that list came, it waits for it and takes its first item, never an item of
 * an answer to another text.
 *
 * The editor shows a list some time after the extension sets it, and reports Enter with the highlighted row's index
 * in the list it had on screen. Until the editor says it shows the current list (an active-item change that names
 * one of its items), an index may still point into an older list: Enter then takes the first item of the current
 * answer (what a user who pressed Enter before the list came asked for), never the item at the old row's index.
 */
export interface SearchView<Item> {
  /** The answer to `text`, now the list shown. True when it is on screen at once; otherwise the editor says so
   * later through `SearchSession.displayed`. */
  show(text: string, items: Item[]): boolean | void;
  /** The list emptied (the text changed): nothing stale stays on screen. */
  clear(): void;
  busy(on: boolean): void;
  /** The user's choice: the picker closes with it. */
  choose(item: Item): void;
}

export class SearchSession<Item> {
  private seq = 0;
  private text: string;
  private shown: { text: string; items: Item[]; onScreen: boolean } | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Enter pressed for this text before its answer came. */
  private acceptFor: string | undefined;
  private closed = false;

  constructor(
    private readonly ask: (text: string) => Promise<Item[]>,
    private readonly view: SearchView<Item>,
    initial = '',
    /** The pause after a keystroke before the text is searched. */
    private readonly delayMs = 60,
  ) {
    this.text = initial;
  }

  /** The text in the box changed: searched after a pause; what was shown goes at once. */
  typed(text: string): void {
    const mine = ++this.seq;
    this.text = text;
    this.shown = undefined;
    this.acceptFor = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.view.clear();
    this.view.busy(true);
    this.timer = setTimeout(() => void this.search(text, mine), this.delayMs);
  }

  /** Searches the text in the box now (the first search, the index grown, a suggestion taken). */
  refresh(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    return this.search(this.text, ++this.seq);
  }

  /** The text is replaced by `text` and searched now (a "did you mean" taken). */
  replace(text: string): Promise<void> {
    this.text = text;
    this.shown = undefined;
    this.acceptFor = undefined;
    this.view.clear();
    return this.refresh();
  }

  /** The editor's highlighted items changed: when they are of the current list, that list is on screen. */
  displayed(active: readonly Item[]): void {
    if (this.shown && active.length && active.every((a) => this.shown!.items.includes(a))) this.shown.onScreen = true;
  }

  /** Enter or a click on `item` (the highlighted one). Acts only on an item of the list shown for the text in the box;
   * before that list came, waits for it; before it is on screen, takes its first item. */
  accept(item: Item | undefined): 'chosen' | 'waiting' | 'nothing' {
    if (!this.shown || this.shown.text !== this.text) {
      this.acceptFor = this.text;
      return 'waiting';
    }
    const first = this.shown.items[0];
    // nothing highlighted (the editor still showed the emptied list), or a row of a list no longer on screen
    if ((item === undefined || !this.shown.onScreen) && first !== undefined && (item === undefined || this.shown.items.includes(item))) {
      this.view.choose(first);
      return 'chosen';
    }
    if (item !== undefined && this.shown.items.includes(item)) {
      this.view.choose(item);
      return 'chosen';
    }
    return 'nothing';
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private async search(text: string, mine: number): Promise<void> {
    this.view.busy(true);
    let items: Item[];
    try {
      items = await this.ask(text);
    } catch {
      if (mine === this.seq && !this.closed) this.view.busy(false);
      return;
    }
    // an answer to a text no longer in the box, or overtaken by a later search: dropped
    if (mine !== this.seq || text !== this.text || this.closed) return;
    this.shown = { text, items, onScreen: false };
    if (this.view.show(text, items) === true) this.shown.onScreen = true;
    this.view.busy(false);
    if (this.acceptFor === text) {
      this.acceptFor = undefined;
      if (items[0] !== undefined) this.accept(items[0]);
    }
  }
}

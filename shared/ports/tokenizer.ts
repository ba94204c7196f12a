/** Counting tokens the way a model family does, to fit a prompt into a budget. */

export interface Tokenizer {
  /** The encoding's name, e.g. `cl100k_base`. */
  readonly encoding: string;
  count(text: string): number;
}

export interface Tokenizers {
  /** The tokenizer for a model string (`provider/model` or a bare id); may load its tables on first use. */
  forModel(model: string): Promise<Tokenizer>;
}

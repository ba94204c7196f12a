/** Counting tokens the way a model family does, to fit a prompt into a budget. */

export interface Tokenizer {
  /** The encoding's name, e.g. `cl100k_base`. */
  readonly encoding: string;
  /** True when this is the model family's own tokenizer; false for the nearest available one. */
  readonly exact: boolean;
  count(text: string): number;
}

export interface Tokenizers {
  /** The tokenizer for a model string (`provider/model` or a bare id); may load its tables on first use. */
  forModel(model: string): Promise<Tokenizer>;
}

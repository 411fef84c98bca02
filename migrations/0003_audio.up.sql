-- Audio token prices (realtime, audio transcription): the audio part of input and output is
-- priced at its own rate when the catalogue sets one, else at the text rate. The four
-- categories of spec 1 stay as they are; audio tokens are a part of input and output, the way
-- reasoning tokens are a part of output.
ALTER TABLE prices
    ADD COLUMN audio_input  numeric(38,9),
    ADD COLUMN audio_output numeric(38,9);

ALTER TABLE requests
    ADD COLUMN audio_input_tokens  bigint NOT NULL DEFAULT 0,
    ADD COLUMN audio_output_tokens bigint NOT NULL DEFAULT 0;

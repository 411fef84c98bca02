ALTER TABLE requests DROP COLUMN audio_output_tokens, DROP COLUMN audio_input_tokens;
ALTER TABLE prices DROP COLUMN audio_output, DROP COLUMN audio_input;

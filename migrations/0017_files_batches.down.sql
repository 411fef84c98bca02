ALTER TABLE models DROP COLUMN IF EXISTS batch_price_factor;
DROP TABLE IF EXISTS batch_items;
DROP TABLE IF EXISTS batches;
DROP TABLE IF EXISTS batch_file_chunks;
DROP TABLE IF EXISTS batch_files;

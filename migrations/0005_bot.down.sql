DROP TABLE bot_health;
DROP TABLE bot_state;

package media

// Endpoint families of the routes this package serves (contract.md).
const (
	Rerank              = "rerank"
	Moderations         = "moderations"
	ImagesGenerations   = "images.generations"
	ImagesEdits         = "images.edits"
	ImagesVariations    = "images.variations"
	AudioSpeech         = "audio.speech"
	AudioTranscriptions = "audio.transcriptions"
	AudioTranslations   = "audio.translations"
)

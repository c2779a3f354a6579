"""Two runs of one script compared: the settings that changed, and the first report's fixes held
against what the second run measured (`gpubottle compare`)."""

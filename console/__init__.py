"""The console: the Django web app that human experts use."""

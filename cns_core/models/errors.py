"""The one error type for a model that cannot be used."""


class ModelUnavailableError(RuntimeError):
    """A model backend cannot load or run; the message names the backend and what to configure."""

    def __init__(self, backend: str, problem: str, remedy: str = ""):
        self.backend = backend
        self.problem = problem
        self.remedy = remedy
        text = f"{backend} backend: {problem}"
        super().__init__(f"{text}. {remedy}" if remedy else text)

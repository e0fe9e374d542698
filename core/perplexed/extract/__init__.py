"""Page content: HTML/PDF/Markdown to text (trafilatura for articles, a strategy per page type, structured
data), run in killable worker processes bounded by the fetch's deadline."""

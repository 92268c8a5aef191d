"""The report's HTML page: the markdown rendered with Python-Markdown, inline CSS, figures as data URIs."""

from __future__ import annotations

import base64
import functools
import re

import jinja2
import markdown as markdown_lib

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans KR","Apple SD Gothic Neo","Malgun Gothic",sans-serif;}
html:lang(ja) body{font-family:system-ui,-apple-system,"Noto Sans JP","Hiragino Sans","Yu Gothic","Meiryo",sans-serif;}
html:lang(zh) body{font-family:system-ui,-apple-system,"Noto Sans SC","PingFang SC","Microsoft YaHei",sans-serif;}
body{
max-width:1100px;margin:2rem auto;padding:0 1rem;line-height:1.6;color:#1b1b1f;background:#fff}
h1{font-size:1.7rem;margin-top:1.2rem}h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2.2rem}
table{border-collapse:collapse;margin:.8rem 0;font-size:.88rem;display:block;overflow-x:auto}
th,td{border:1px solid #ccc;padding:.3rem .55rem;vertical-align:top}th{background:#f3f4f6}
tr:nth-child(even) td{background:#fafafa}
code{background:#f3f4f6;padding:.05rem .25rem;border-radius:3px;font-size:.9em}
pre{background:#f6f8fa;padding:.8rem;overflow-x:auto;border-radius:4px;white-space:pre-wrap;word-break:break-all}
pre code{background:none;padding:0}
img{max-width:100%;height:auto;border:1px solid #eee}
blockquote{border-left:4px solid #d0d7de;margin:0;padding:.2rem 1rem;color:#444;background:#fafbfc}
nav.langs{font-size:.85rem;color:#555}nav.langs a{margin-right:.6rem}
footer{margin-top:3rem;font-size:.8rem;color:#666;border-top:1px solid #eee;padding-top:.6rem}
"""


@functools.cache  # one compiled page template per process (a render writes two pages per language)
def _page_template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.PackageLoader("embedswap", "templates"), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    return env.get_template("report.html.j2")


def markdown_to_html(text: str, lang: str, title: str, images: dict[str, bytes] | None = None,
                     languages: list[str] | None = None, footer: str = "") -> str:
    """A self-contained HTML page: inline CSS, figures as base64 data URIs, no external asset."""
    body = markdown_lib.markdown(text, extensions=["tables", "fenced_code"], output_format="html")
    for name, data in (images or {}).items():
        uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        body = body.replace(f'src="figures/{name}.png"', f'src="{uri}"')
    body = re.sub(r'src="figures/[^"]*"', 'src=""', body)  # a figure that was not drawn: never a dangling link
    return _page_template().render(lang=lang, title=title, body=body, css=CSS, languages=languages or [],
                                   footer=footer)


def page_title(text: str, fallback: str) -> str:
    """The report's first level-1 heading, without code marks."""
    match = re.search(r"^# (.+)$", text, flags=re.M)
    return match.group(1).replace("`", "").strip() if match else fallback

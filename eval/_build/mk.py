import json, sys
def case(out, repo, num, url, title, query, mode, cause, fix, kw, confirmed, lang, het, needs, sq, rank):
    d = dict(id=f"{repo}-{num}", url=url, title=title, query=query[:1500], failure_mode=mode, cause=cause, fix=fix,
             fix_keywords=kw, confirmed=confirmed, language=lang, has_error_text=het, needs=needs if not het else [],
             sample_query=sq, sample_rank=rank)
    with open(out, "a") as f: f.write(json.dumps(d, ensure_ascii=False) + "\n")
